package sign_test

import (
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"imagectl/internal/sign"
)

// The statement Attest signs binds a predicate to exactly one digest.
func ExampleNewStatement() {
	ref, _ := name.NewDigest("registry.example/staging/pytorch@sha256:" + strings.Repeat("a", 64))
	st, err := sign.NewStatement(ref, sign.LockPredicateType, []byte(`{"name": "pytorch"}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	s, pred, err := sign.ParseStatement(st)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.GetType())
	fmt.Println(s.GetPredicateType())
	fmt.Println(s.GetSubject()[0].GetName(), s.GetSubject()[0].GetDigest()["sha256"][:8])
	fmt.Println(string(pred))
	// Output:
	// https://in-toto.io/Statement/v1
	// https://imagectl.dev/attestations/lock/v1
	// registry.example/staging/pytorch aaaaaaaa
	// {"name":"pytorch"}
}

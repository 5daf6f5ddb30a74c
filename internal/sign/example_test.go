package sign_test

import (
	"encoding/json"
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
	var s sign.Statement
	_ = json.Unmarshal(st, &s)
	fmt.Println(s.Type)
	fmt.Println(s.PredicateType)
	fmt.Println(s.Subject[0].Name, s.Subject[0].Digest["sha256"][:8])
	fmt.Println(string(s.Predicate))
	// Output:
	// https://in-toto.io/Statement/v0.1
	// https://imagectl.dev/attestations/lock/v1
	// registry.example/staging/pytorch aaaaaaaa
	// {"name":"pytorch"}
}

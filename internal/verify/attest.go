package verify

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"

	"imagectl/internal/sign"
)

// Attest signs res as an in-toto attestation of type PredicateType on ref,
// the image it verified (cosign's tag scheme; `cosign verify-attestation
// --type` reads it). A failed result is signed too: promotion reads Passed.
// It refuses a result bound to another digest.
func Attest(ctx context.Context, ref name.Digest, res *Result, opts ...sign.Option) error {
	if res == nil {
		return fmt.Errorf("attesting %s: no verification result", ref)
	}
	if res.Digest != ref.DigestStr() {
		return fmt.Errorf("attesting %s: the result is for digest %q", ref, res.Digest)
	}
	pred, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("encoding the verification result: %w", err)
	}
	if err := sign.Attest(ctx, ref, PredicateType, pred, opts...); err != nil {
		return fmt.Errorf("signing the verification result of %s: %w", ref, err)
	}
	return nil
}

package release

import (
	"context"
	"errors"

	"github.com/google/go-containerregistry/pkg/name"

	"imagectl/internal/lock"
	"imagectl/internal/logs"
	"imagectl/internal/verify"
)

// attestIndex writes, with the verifier key, the PASSED test-result
// attestation on d when d is an image index every platform image of which
// carries a passing verification (verify.AttestIndex): what the admission
// policies read when a pod names the index. With a platform still
// unverified (one promotion may skip) it writes nothing and says so: the
// index is then promoted without it, and admission admits only the
// verified platform images by their own digests.
func (r *Real) attestIndex(ctx context.Context, l *lock.Lock, d name.Digest) error {
	if len(l.Platforms) == 0 || len(r.cfg.VerifierSignOptions) == 0 {
		return nil
	}
	err := verify.AttestIndex(ctx, d, l, r.cfg.VerifierPublicKey, r.signOpts(r.cfg.VerifierSignOptions)...)
	var uv *verify.UnverifiedPlatformsError
	if errors.As(err, &uv) {
		logs.From(ctx).Warn("no test-result attestation on the image index: admission policies will refuse a pod that names it", "image", l.Name, "index", d.String(), "unverified", uv.Missing)
		return nil
	}
	if err != nil {
		return r.cfg.Access.Classify(err)
	}
	logs.From(ctx).Info("attested the image index's verification", "image", l.Name, "index", d.String())
	return nil
}

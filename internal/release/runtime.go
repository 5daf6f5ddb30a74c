package release

import (
	"context"

	"github.com/google/go-containerregistry/pkg/name"

	"imagectl/internal/lock"
	"imagectl/internal/verify"
	"imagectl/internal/verify/runtimes"
)

// VerifyRuntime is how a release runs one image's probes: a
// runtimes.Selection's Runtime, or a fake in tests.
type VerifyRuntime func(l *lock.Lock, d name.Digest) (verify.Runtime, error)

// SelectVerifyRuntime selects the runtime a release verifies with, as
// runtimes.Select does for imagectl verify, with one rule of its own: auto
// never picks in-place (a release verifies images it just built, never its
// own), whatever opts say. In-place runs only when named (its results are
// signed only when the init's fingerprint names the digest).
func SelectVerifyRuntime(ctx context.Context, kind string, opts ...runtimes.Option) (*runtimes.Selection, error) {
	return runtimes.Select(ctx, kind, append(opts, runtimes.WithAutoInPlace(nil))...)
}

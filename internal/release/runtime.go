package release

import (
	"context"
	"os"

	"github.com/google/go-containerregistry/pkg/name"

	"imagectl/internal/exitcode"
	"imagectl/internal/lock"
	"imagectl/internal/verify"
)

// VerifyRuntime is how a release runs one image's probes.
type VerifyRuntime func(l *lock.Lock, d name.Digest) (verify.Runtime, error)

// SelectVerifyRuntime resolves base.Kind (auto through d.Detect, which for
// a release never picks in-place: it verifies images it just built, not its
// own) and returns the VerifyRuntime that builds it per image, by digest,
// with the kind chosen and, for auto, why. With base.Storage empty, each
// image verified in a container gets a throwaway ready storage folder
// (verify.ReadyStorage), removed afterwards. There is no fallback: a runtime that
// cannot be found is an error, and in-place runs only when named (its
// results are signed only when the init's fingerprint names the digest).
func SelectVerifyRuntime(ctx context.Context, d verify.Detector, base verify.RuntimeConfig) (VerifyRuntime, string, string, error) {
	kind, reason := base.Kind, ""
	if kind == "" || kind == verify.RuntimeAuto {
		var err error
		if kind, reason, err = d.Detect(ctx, base, false); err != nil {
			return nil, "", "", &verify.NotRunError{Stage: "runtime", Err: err}
		}
	}
	base.Kind = kind
	// Fail on a bad kind now, not at the first image's verify stage.
	if _, err := verify.NewRuntime(nil, base); err != nil {
		return nil, "", "", exitcode.Wrap(exitcode.Usage, err)
	}
	return forKind(base), kind, reason, nil
}

func forKind(base verify.RuntimeConfig) VerifyRuntime {
	return func(l *lock.Lock, d name.Digest) (verify.Runtime, error) {
		cfg := base
		cfg.Image = d
		// A Job mounts its storage claim (or an emptyDir), never a folder here.
		if cfg.Kind == verify.RuntimeInPlace || cfg.Kind == verify.RuntimeKubernetes || cfg.Storage != "" || l.Runtime.Storage.Path == "" {
			return verify.NewRuntime(l, cfg)
		}
		st, err := verify.ReadyStorage(l)
		if err != nil {
			return nil, err
		}
		cfg.Storage = st.Dir
		rt, err := verify.NewRuntime(l, cfg)
		if err != nil {
			_ = os.RemoveAll(st.Dir)
			return nil, err
		}
		return st.Wrap(rt), nil
	}
}

package resolve

import (
	"context"
	"fmt"

	"imagectl/internal/exitcode"
	"imagectl/internal/lock"
	"imagectl/internal/spec"
)

// StaleError reports a lock that no longer matches its inputs: the spec or
// the compatibility catalog changed since it was written.
type StaleError struct {
	Image  string
	Reason string
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("lock of %s is stale: %s; run imagectl lock to re-resolve it", e.Image, e.Reason)
}

// ExitCode implements exitcode.Coder.
func (e *StaleError) ExitCode() int { return exitcode.LockStale }

// MissingError reports an image that has no lock yet. It exits like a
// stale lock (exitcode.LockStale: the image needs imagectl lock), but says
// what is wrong.
type MissingError struct {
	Image string
	Path  string
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("no lock for %s: %s does not exist; run imagectl lock --image %s to resolve it", e.Image, e.Path, e.Image)
}

// ExitCode implements exitcode.Coder.
func (e *MissingError) ExitCode() int { return exitcode.LockStale }

// Check tells whether l is still the lock of img, offline: no network and
// no daemon. It returns a *StaleError when the spec inputs or the catalog
// changed, a *CatalogError when img now breaks a catalog rule, nil when the
// lock is current. Tampering is found earlier, by Parse.
func Check(ctx context.Context, img spec.Image, l *lock.Lock, opts ...Option) error {
	c := defaultCatalog()
	var o options
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return err
		}
	}
	if o.catalog != nil {
		c = o.catalog
	}
	if l.Name != img.Name {
		return &StaleError{Image: img.Name, Reason: fmt.Sprintf("the lock is for image %q", l.Name)}
	}
	if _, _, err := applyCatalog(c, img); err != nil {
		return err
	}
	got, err := InputsDigest(img)
	if err != nil {
		return err
	}
	if got != l.Spec.InputsDigest {
		return &StaleError{Image: img.Name, Reason: fmt.Sprintf("the spec changed since the lock was written (inputs %s, lock has %s)", short(got), short(l.Spec.InputsDigest))}
	}
	if d := c.Digest(); d != l.CatalogDigest {
		return &StaleError{Image: img.Name, Reason: fmt.Sprintf("the compatibility catalog changed (catalog %s, lock has %s)", short(d), short(l.CatalogDigest))}
	}
	return nil
}

func short(d string) string {
	if len(d) > len("sha256:")+12 {
		return d[:len("sha256:")+12]
	}
	return d
}

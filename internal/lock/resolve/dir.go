package resolve

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"imagectl/internal/lock"
	"imagectl/internal/logs"
	"imagectl/internal/spec"
)

// LockAll resolves each image and writes its lock under dir, atomically.
// An image that cannot lock does not stop the others: the error joins
// every failed image's (each named; the first one's exit code wins) and
// the locks of the rest are written.
func LockAll(ctx context.Context, dir string, imgs []spec.Image, opts ...Option) error {
	if err := CheckPlatformBuilders(imgs, opts...); err != nil {
		return err
	}
	// Every image is tried, so that one run reports every image's error;
	// the ones that lock are written. Only a cancel stops the loop.
	var errs []error
	for _, img := range imgs {
		if err := ctx.Err(); err != nil {
			return errors.Join(append(errs, err)...)
		}
		l, err := Image(ctx, img, opts...)
		if err == nil {
			p := lock.Path(dir, img.Name)
			if err = lock.Write(p, l); err == nil {
				logs.From(ctx).Info("locked", "image", img.Name, "path", p, "debs", len(l.Apt), "wheels", len(l.Pip))
				continue
			}
		}
		errs = append(errs, fmt.Errorf("image %s: %w", img.Name, err))
	}
	return errors.Join(errs...)
}

// CheckResult is the outcome of checking one image's lock.
type CheckResult struct {
	Image string `json:"image"`
	Path  string `json:"path"`
	// Error is empty when the lock is current.
	Error string `json:"error,omitempty"`
	err   error
}

// CheckAll checks every image's lock under dir, offline. It returns one
// result per image and an error joining the failures (the first failure's
// exit code wins).
func CheckAll(ctx context.Context, dir string, imgs []spec.Image, opts ...Option) ([]CheckResult, error) {
	var res []CheckResult
	var errs []error
	for _, img := range imgs {
		r := CheckResult{Image: img.Name, Path: lock.Path(dir, img.Name)}
		l, err := lock.Read(r.Path)
		if errors.Is(err, fs.ErrNotExist) {
			err = &MissingError{Image: img.Name, Path: r.Path}
		}
		if err == nil {
			err = Check(ctx, img, l, opts...)
		}
		if err != nil {
			r.Error, r.err = err.Error(), err
			errs = append(errs, err)
		}
		res = append(res, r)
	}
	return res, errors.Join(errs...)
}

// UpgradeAll upgrades each image's lock under dir and returns what moved,
// by image name. A lock is rewritten only when its upgrade succeeded.
func UpgradeAll(ctx context.Context, dir string, imgs []spec.Image, opts ...Option) (map[string]lock.Changes, error) {
	out := map[string]lock.Changes{}
	if err := CheckPlatformBuilders(imgs, opts...); err != nil {
		return out, err
	}
	for _, img := range imgs {
		p := lock.Path(dir, img.Name)
		old, err := lock.Read(p)
		if err != nil {
			return out, fmt.Errorf("image %s: %w (lock it first: imagectl lock --image %s)", img.Name, err, img.Name)
		}
		l, err := Upgrade(ctx, img, old, opts...)
		if err != nil {
			return out, err
		}
		if err := lock.Write(p, l); err != nil {
			return out, err
		}
		out[img.Name] = lock.Diff(old, l)
	}
	return out, nil
}

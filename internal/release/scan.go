package release

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"

	"imagectl/internal/lock"
	"imagectl/internal/logs"
	"imagectl/internal/scan"
)

// Scans implements Stages: the scan stage runs when cfg.VulnDB is set.
func (r *Real) Scans() bool { return r.cfg.VulnDB != "" }

// Scan implements Stages: it scans d against the database of cfg.VulnDB
// with the image's VEX document (images/NAME/vex.json, when there is one)
// and signs each result as a vuln attestation, for the promotion's
// vulnerabilities gate to read: d itself when it is one image, or every
// platform image of d when d is an image index (those carry the SBOMs, and
// the gate reads each). Without cfg.VulnDB it does nothing.
func (r *Real) Scan(ctx context.Context, l *lock.Lock, d name.Digest) error {
	if r.cfg.VulnDB == "" {
		return nil
	}
	opts := append([]scan.Option{scan.WithAccess(r.cfg.Access)}, r.cfg.ScanOptions...)
	vexPath := filepath.Join(r.cfg.ImagesDir, l.Name, scan.VEXFile)
	if src, err := scan.LoadVEX(vexPath); err == nil {
		opts = append(opts, scan.WithVEX(src))
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	targets, err := scan.Targets(ctx, d, opts...)
	if err != nil {
		return err
	}
	db, err := scan.OpenDB(ctx, r.cfg.VulnDB, opts...)
	if err != nil {
		return err
	}
	defer db.Close()
	for _, t := range targets {
		res, err := scan.Image(ctx, t.Ref, r.cfg.PublicKey, db, opts...)
		if err != nil {
			return err
		}
		if err := scan.Attest(ctx, t.Ref, res, r.signOpts(r.cfg.SignOptions)...); err != nil {
			return fmt.Errorf("attesting the scan of %s: %w", t.Ref, err)
		}
		logs.From(ctx).Info("scanned", "image", l.Name, "platform", t.Platform, "digest", t.Ref.DigestStr(), "findings", len(res.Findings), "suppressed", len(res.Findings)-len(res.Active()), "db", db.Source)
	}
	return nil
}

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

// scanAndAttest scans d (a single-platform image) against the database of
// cfg.VulnDB with the image's VEX document (images/NAME/vex.json, when
// there is one) and signs the result as its vuln attestation, for the
// promotion's vulnerabilities gate to read. Without cfg.VulnDB it does
// nothing; an image index is not scanned (its platform images carry the
// SBOMs), so a vulnerabilities gate on it refuses.
func (r *Real) scanAndAttest(ctx context.Context, l *lock.Lock, d name.Digest) error {
	if r.cfg.VulnDB == "" {
		return nil
	}
	if len(l.Platforms) > 0 {
		logs.From(ctx).Warn("not scanned: an image index; scan each platform image", "image", l.Name, "digest", d.String())
		return nil
	}
	opts := append([]scan.Option{scan.WithAccess(r.cfg.Access)}, r.cfg.ScanOptions...)
	vexPath := filepath.Join(r.cfg.ImagesDir, l.Name, scan.VEXFile)
	if src, err := scan.LoadVEX(vexPath); err == nil {
		opts = append(opts, scan.WithVEX(src))
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	db, err := scan.OpenDB(ctx, r.cfg.VulnDB, opts...)
	if err != nil {
		return err
	}
	defer db.Close()
	res, err := scan.Image(ctx, d, r.cfg.PublicKey, db, opts...)
	if err != nil {
		return err
	}
	if err := scan.Attest(ctx, d, res, r.signOpts(r.cfg.SignOptions)...); err != nil {
		return fmt.Errorf("attesting the scan of %s: %w", d, err)
	}
	logs.From(ctx).Info("scanned", "image", l.Name, "findings", len(res.Findings), "suppressed", len(res.Findings)-len(res.Active()), "db", db.Source)
	return nil
}

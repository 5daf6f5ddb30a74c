package scan

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"imagectl/internal/auth"
	"imagectl/internal/exitcode"
	"imagectl/internal/releasefile"
	"imagectl/internal/scan/report"
	"imagectl/internal/sign"
)

// Rescan is the re-scan of one promoted digest.
type Rescan struct {
	Image  string `json:"image"`
	Month  string `json:"month"`
	Digest string `json:"digest"` // release-repo@sha256:...
	// Platform is the platform of an image index's image that Digest
	// names ("" for a single-platform release); Index is then the
	// index's release-repo@sha256:...
	Platform string `json:"platform,omitempty"`
	Index    string `json:"index,omitempty"`
	// Previous is when the last signed scan finished; zero: none.
	Previous string `json:"previousScan,omitempty"`
	// New are the findings that the last scan did not have.
	New []Finding `json:"new"`
	// Breaking are the policy violations today's result has that involve
	// a new finding (or every violation when there was no earlier scan).
	Breaking []report.Violation `json:"breaking"`
	Findings int                `json:"findings"`
	// Severities counts today's active findings (not suppressed by VEX)
	// by severity, in lower case (critical, high, ...).
	Severities map[string]int `json:"severities,omitempty"`
	// Expired is the release's support end (YYYY-MM-DD) when its support
	// window has ended: it is reported, not scanned or attested again.
	Expired string `json:"expired,omitempty"`
}

// BreaksPolicyError: a re-scan found something new that breaks an image's
// vulnerability policy (exit 5).
type BreaksPolicyError struct{ Rescans []Rescan }

func (e *BreaksPolicyError) Error() string {
	var parts []string
	for _, r := range e.Rescans {
		for _, v := range r.Breaking {
			what := r.Digest
			if r.Platform != "" {
				what = r.Platform + " " + r.Digest
			}
			parts = append(parts, fmt.Sprintf("%s %s (%s): %s", r.Image, r.Month, what, v.Reason))
		}
	}
	return "released images break their vulnerability policy since the last scan:\n  " + strings.Join(parts, "\n  ")
}

// ExitCode implements exitcode.Coder.
func (e *BreaksPolicyError) ExitCode() int { return exitcode.PromotionRefused }

// Releases re-scans every promoted digest of the release files under
// imagesDir (images/*/releases.json, in the release repository; of an
// image index, each platform's image: Targets) against
// db, signs each new result as its vuln attestation (signOpts), and
// reports per image and month what is new since the last signed scan
// (pubKeyPath verifies both the SBOM and the earlier scan). policies
// (by image name) decide what breaks; a *BreaksPolicyError comes with
// the reports when anything new does.
func Releases(ctx context.Context, imagesDir, pubKeyPath string, db *DB, policies map[string]report.Policy, signOpts []sign.Option, opts ...Option) ([]Rescan, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	paths, err := filepath.Glob(filepath.Join(imagesDir, "*", releasefile.FileName))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no release files (%s) under %s", filepath.Join("*", releasefile.FileName), imagesDir)
	}
	sort.Strings(paths)
	var out, breaking []Rescan
	for _, p := range paths {
		f, err := releasefile.ReadFile(p)
		if err != nil {
			return out, err
		}
		iopts := opts
		vexPath := filepath.Join(filepath.Dir(p), VEXFile)
		if src, err := LoadVEX(vexPath); err == nil {
			iopts = append(append([]Option(nil), opts...), WithVEX(src))
		} else if !errors.Is(err, fs.ErrNotExist) {
			return out, err
		}
		for _, rel := range f.Releases {
			src, err := rel.Digest()
			if err != nil {
				return out, fmt.Errorf("%s: release %s: %w", p, rel.Source, err)
			}
			if expired(rel.SupportEnd, o.now()) {
				out = append(out, Rescan{Image: f.Image, Month: rel.Month, Digest: f.Repository + "@" + src.DigestStr(),
					New: []Finding{}, Breaking: []report.Violation{}, Expired: rel.SupportEnd})
				continue
			}
			ref, err := name.NewDigest(f.Repository+"@"+src.DigestStr(), o.access.NameOptions(auth.RegistryOf(f.Repository))...)
			if err != nil {
				return out, fmt.Errorf("%s: %w", p, err)
			}
			targets, err := Targets(ctx, ref, WithAccess(o.access), WithRemoteOptions(o.remote...))
			if err != nil {
				return out, fmt.Errorf("%s: release %s: %w", p, rel.Source, err)
			}
			for _, t := range targets {
				rs, err := rescan(ctx, f.Image, rel.Month, t.Ref, pubKeyPath, db, policies, signOpts, iopts, o)
				if err != nil {
					return out, err
				}
				if t.Platform != "" {
					rs.Platform, rs.Index = t.Platform, ref.String()
				}
				out = append(out, rs)
				if len(rs.Breaking) > 0 {
					breaking = append(breaking, rs)
				}
			}
		}
	}
	if len(breaking) > 0 {
		return out, &BreaksPolicyError{Rescans: breaking}
	}
	return out, nil
}

func rescan(ctx context.Context, image, month string, ref name.Digest, pub string, db *DB, policies map[string]report.Policy, signOpts []sign.Option, opts []Option, o *options) (Rescan, error) {
	rs := Rescan{Image: image, Month: month, Digest: ref.String(), New: []Finding{}, Breaking: []report.Violation{}}
	prev, err := report.Latest(ctx, ref, pub, sign.WithAccess(o.access))
	var none *sign.NoAttestationError
	if err != nil && !errors.As(err, &none) {
		return rs, err
	}
	r, err := Image(ctx, ref, pub, db, opts...)
	if err != nil {
		return rs, err
	}
	rs.Findings = len(r.Findings)
	for _, f := range r.Active() {
		if rs.Severities == nil {
			rs.Severities = map[string]int{}
		}
		rs.Severities[strings.ToLower(f.Severity)]++
	}
	seen := map[string]bool{}
	if prev != nil {
		rs.Previous = prev.FinishedOn.UTC().Format("2006-01-02T15:04:05Z")
		for _, f := range prev.Findings {
			seen[f.ID+" "+f.Package+" "+f.Installed] = true
		}
	}
	isNew := map[string]bool{}
	for _, f := range r.Findings {
		if k := f.ID + " " + f.Package + " " + f.Installed; !seen[k] {
			rs.New = append(rs.New, f)
			isNew[f.ID] = true
		}
	}
	if p, ok := policies[image]; ok {
		for _, v := range report.Evaluate(r, p) {
			if prev == nil || isNew[v.ID] {
				rs.Breaking = append(rs.Breaking, v)
			}
		}
	}
	if err := Attest(ctx, ref, r, signOpts...); err != nil {
		return rs, fmt.Errorf("attesting the re-scan of %s: %w", ref, err)
	}
	return rs, nil
}

// expired reports whether a support window ending on end (YYYY-MM-DD;
// empty: no window) has ended at now.
func expired(end string, now time.Time) bool {
	if end == "" {
		return false
	}
	t, err := time.Parse(time.DateOnly, end)
	return err == nil && !now.Before(t.AddDate(0, 0, 1))
}

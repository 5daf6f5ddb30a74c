package discover

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"imagectl/internal/exitcode"
	"imagectl/internal/lock"
	"imagectl/internal/promote"
	"imagectl/internal/scan/report"
	"imagectl/internal/sign"
	"imagectl/internal/verify"
)

// Side is one release of a comparison: what its signed attestations say.
type Side struct {
	Ref    string               `json:"ref"`
	Digest string               `json:"digest"`
	Lock   *promote.LockSummary `json:"lock,omitempty"`
	// Platform is the platform whose image was compared (an image index
	// compares one platform's SBOM, scan and layers: the first one both
	// sides have).
	Platform string `json:"platform,omitempty"`
	// Size is the compressed size of the image's layers and config, bytes.
	Size   int64 `json:"size"`
	Layers int   `json:"layers"`
	// Packages is how many packages its signed SPDX SBOM lists.
	Packages int `json:"packages"`
	// Verification is the signed verification of the compared image; nil
	// when none verifies under the verifier keys.
	Verification *Verification `json:"verification,omitempty"`
	// Scan is the newest signed vulnerability scan; nil when none.
	Scan *ScanSummary `json:"scan,omitempty"`
}

// Verification is what a signed verification attestation says.
type Verification struct {
	Passed   bool   `json:"passed"`
	Runtime  string `json:"runtime"`
	GPU      string `json:"gpu,omitempty"`
	GPUs     int    `json:"gpus"`
	Driver   string `json:"driver,omitempty"`
	Started  string `json:"started"`
	Duration string `json:"duration"`
	// Checks are the checks' results by name: status and value.
	Checks []verify.Check `json:"checks"`
}

// Check returns the named check, or nil.
func (v *Verification) Check(name string) *verify.Check {
	for i := range v.Checks {
		if v.Checks[i].Name == name {
			return &v.Checks[i]
		}
	}
	return nil
}

func summarizeVerification(r verify.Result) *Verification {
	v := &Verification{Passed: r.Passed, Runtime: r.Runtime, GPUs: len(r.Host.GPUs), Driver: r.Host.DriverVersion,
		Started: r.StartedAt.UTC().Format("2006-01-02T15:04:05Z"), Duration: r.Duration, Checks: r.Checks}
	if len(r.Host.GPUs) > 0 {
		v.GPU = r.Host.GPUs[0].Name
	}
	return v
}

// ScanSummary is the newest signed scan: when, with which database, and
// its active findings (VEX applied) by severity.
type ScanSummary struct {
	Finished   string         `json:"finished"`
	DBBuilt    string         `json:"db_built"`
	Findings   int            `json:"findings"`
	Suppressed int            `json:"suppressed"`
	BySeverity map[string]int `json:"by_severity"`
}

func summarizeScan(r *report.Result) *ScanSummary {
	s := &ScanSummary{Finished: r.FinishedOn.UTC().Format("2006-01-02T15:04:05Z"), DBBuilt: r.DB.Built.UTC().Format("2006-01-02"), BySeverity: map[string]int{}}
	for _, f := range r.Findings {
		if f.Suppressed != nil {
			s.Suppressed++
			continue
		}
		s.Findings++
		s.BySeverity[strings.ToLower(f.Severity)]++
	}
	return s
}

// Diff is what changed from one release to another.
type Diff struct {
	Old Side `json:"old"`
	New Side `json:"new"`
	// Packages added, removed and changed, from the signed SBOMs.
	Added   []Package       `json:"added"`
	Removed []Package       `json:"removed"`
	Changed []PackageChange `json:"changed"`
	// Vulnerabilities fixed (in Old's newest scan, not in New's) and new
	// (the other way), from the signed scans with VEX applied: a finding
	// a VEX statement suppresses counts as absent.
	Fixed []report.Finding `json:"fixed"`
	// Introduced are the findings New has that Old had not.
	Introduced []report.Finding `json:"introduced"`
	// SizeDelta is New's size minus Old's; AddedBytes the size of the
	// layers New has that Old has not (what a node that has Old pulls).
	SizeDelta     int64 `json:"size_delta"`
	AddedBytes    int64 `json:"added_bytes"`
	LayersAdded   int   `json:"layers_added"`
	LayersRemoved int   `json:"layers_removed"`
}

// UnsignedError refuses an input without a signature by a trusted key.
type UnsignedError struct {
	Ref    string
	Reason string
}

func (e *UnsignedError) Error() string {
	return fmt.Sprintf("%s: refused: %s", e.Ref, e.Reason)
}

// ExitCode implements exitcode.Coder: PromotionRefused, as pin's gates.
func (e *UnsignedError) ExitCode() int { return exitcode.PromotionRefused }

// Compare reads what the signed attestations of old and new say and tells
// them apart. Either without a signature and a lock attestation by a
// trusted signing key is refused (*UnsignedError, exit 5); a missing SBOM
// or scan is an empty side, not an error.
func Compare(ctx context.Context, old, new name.Digest, opts ...Option) (*Diff, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	if len(o.keys) == 0 {
		return nil, errors.New("comparing releases: no signing public key")
	}
	op, err := o.platforms(ctx, old)
	if err != nil {
		return nil, err
	}
	np, err := o.platforms(ctx, new)
	if err != nil {
		return nil, err
	}
	platform := ""
	oimg, nimg := old, new
	if len(op) > 0 || len(np) > 0 {
		for _, c := range np {
			for _, oc := range op {
				if c.Platform == oc.Platform && platform == "" {
					platform, oimg, nimg = c.Platform, oc.Ref, c.Ref
				}
			}
		}
		if platform == "" {
			return nil, fmt.Errorf("comparing %s and %s: no platform in common", old, new)
		}
	}
	d := &Diff{}
	var opk, npk []Package
	var oscan, nscan *report.Result
	if d.Old, opk, oscan, err = o.side(ctx, old, oimg); err != nil {
		return nil, err
	}
	if d.New, npk, nscan, err = o.side(ctx, new, nimg); err != nil {
		return nil, err
	}
	d.Old.Platform, d.New.Platform = platform, platform
	d.Added, d.Removed, d.Changed = diffPackages(opk, npk)
	d.Fixed, d.Introduced = diffFindings(oscan, nscan)
	ol, osize, err := o.layers(ctx, oimg)
	if err != nil {
		return nil, err
	}
	nlayers, nsize, err := o.layers(ctx, nimg)
	if err != nil {
		return nil, err
	}
	d.Old.Layers, d.Old.Size = len(ol), osize
	d.New.Layers, d.New.Size = len(nlayers), nsize
	d.SizeDelta = d.New.Size - d.Old.Size
	for dg, size := range nlayers {
		if _, ok := ol[dg]; !ok {
			d.LayersAdded++
			d.AddedBytes += size
		}
	}
	for dg := range ol {
		if _, ok := nlayers[dg]; !ok {
			d.LayersRemoved++
		}
	}
	return d, nil
}

// platforms lists an image index's images; nil for a single image.
func (o *options) platforms(ctx context.Context, d name.Digest) ([]sign.Child, error) {
	desc, err := remote.Get(d, o.remoteOptions(ctx)...)
	if err != nil {
		return nil, o.access.Classify(fmt.Errorf("reading %s: %w", d, err))
	}
	if !desc.MediaType.IsIndex() {
		return nil, nil
	}
	idx, err := desc.ImageIndex()
	if err != nil {
		return nil, err
	}
	cs, err := sign.IndexImages(d, idx)
	if err != nil {
		return nil, err
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].Platform == "linux/amd64" && cs[j].Platform != "linux/amd64" })
	return cs, nil
}

// layers returns the image's layers by digest with their sizes, and its
// total size (layers and config).
func (o *options) layers(ctx context.Context, img name.Digest) (map[string]int64, int64, error) {
	desc, err := remote.Get(img, o.remoteOptions(ctx)...)
	if err != nil {
		return nil, 0, o.access.Classify(fmt.Errorf("reading %s: %w", img, err))
	}
	var m v1.Manifest
	if err := json.Unmarshal(desc.Manifest, &m); err != nil {
		return nil, 0, fmt.Errorf("reading the manifest of %s: %w", img, err)
	}
	out := map[string]int64{}
	total := m.Config.Size
	for _, l := range m.Layers {
		out[l.Digest.String()] = l.Size
		total += l.Size
	}
	return out, total, nil
}

// side reads ref's signature and lock attestation (required) and img's
// SBOM, scan and verification (img is ref, or one platform's image of it).
func (o *options) side(ctx context.Context, ref, img name.Digest) (Side, []Package, *report.Result, error) {
	s := Side{Ref: ref.String(), Digest: ref.DigestStr()}
	found, err := sign.InspectKeys(ctx, ref, o.keys, o.signOptions()...)
	if err != nil {
		return s, nil, nil, err
	}
	signed := false
	for _, f := range found {
		if !f.Signed() {
			continue
		}
		signed = true
		for _, pb := range f.Predicates[sign.LockPredicateType] {
			if l, err := lock.Parse("lock attestation", pb); err == nil && s.Lock == nil {
				ls := promote.Summarize(l)
				s.Lock = &ls
			}
		}
	}
	if !signed {
		return s, nil, nil, &UnsignedError{Ref: ref.String(), Reason: "no signature by a trusted key (" + strings.Join(o.keys, ", ") + ")"}
	}
	if s.Lock == nil {
		return s, nil, nil, &UnsignedError{Ref: ref.String(), Reason: "no lock attestation by a trusted key"}
	}
	if img.DigestStr() != ref.DigestStr() {
		if found, err = sign.InspectKeys(ctx, img, o.keys, o.signOptions()...); err != nil {
			return s, nil, nil, err
		}
	}
	var pkgs []Package
	var latest *report.Result
	for _, f := range found {
		for _, pb := range f.Predicates[sign.SPDXPredicateType] {
			if pkgs == nil {
				if pkgs, err = spdxPackages(pb); err != nil {
					return s, nil, nil, fmt.Errorf("%s: %w", img, err)
				}
			}
		}
		for _, pb := range f.Predicates[report.VulnPredicateType] {
			r, err := report.ParsePredicate(pb)
			if err != nil {
				continue
			}
			if latest == nil || r.FinishedOn.After(latest.FinishedOn) {
				latest = r
			}
		}
	}
	s.Packages = len(pkgs)
	if latest != nil {
		s.Scan = summarizeScan(latest)
	}
	v, err := o.verification(ctx, img)
	if err != nil {
		return s, nil, nil, err
	}
	s.Verification = v
	return s, pkgs, latest, nil
}

// verification reads the newest verification of img signed by a verifier
// key, passing ones first.
func (o *options) verification(ctx context.Context, img name.Digest) (*Verification, error) {
	if len(o.verifierKeys) == 0 {
		return nil, nil
	}
	found, err := sign.InspectKeys(ctx, img, o.verifierKeys, o.signOptions()...)
	if err != nil {
		return nil, err
	}
	var best *verify.Result
	for _, f := range found {
		for _, pb := range f.Predicates[sign.VerificationPredicateType] {
			var r verify.Result
			if json.Unmarshal(pb, &r) != nil || r.Digest != img.DigestStr() {
				continue
			}
			if best == nil || (r.Passed && !best.Passed) || (r.Passed == best.Passed && r.StartedAt.After(best.StartedAt)) {
				best = &r
			}
		}
	}
	if best == nil {
		return nil, nil
	}
	return summarizeVerification(*best), nil
}

// diffFindings: active findings of old absent from new (fixed), and of
// new absent from old (introduced), by ID and package.
func diffFindings(old, new *report.Result) (fixed, introduced []report.Finding) {
	key := func(f report.Finding) string { return f.ID + " " + f.Package }
	active := func(r *report.Result) map[string]report.Finding {
		m := map[string]report.Finding{}
		if r != nil {
			for _, f := range r.Active() {
				m[key(f)] = f
			}
		}
		return m
	}
	o, n := active(old), active(new)
	for k, f := range o {
		if _, ok := n[k]; !ok {
			fixed = append(fixed, f)
		}
	}
	for k, f := range n {
		if _, ok := o[k]; !ok {
			introduced = append(introduced, f)
		}
	}
	by := func(s []report.Finding) {
		sort.Slice(s, func(i, j int) bool { return key(s[i]) < key(s[j]) })
	}
	by(fixed)
	by(introduced)
	return fixed, introduced
}

// Summary is one line saying what changed: packages changed, added and
// removed (the first few changes named), vulnerabilities fixed and new,
// and the bytes a node holding Old pulls.
func (d *Diff) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d package(s) changed", len(d.Changed))
	for i, c := range d.Changed {
		if i == 3 {
			b.WriteString(", ...")
			break
		}
		sep := " ("
		if i > 0 {
			sep = ", "
		}
		fmt.Fprintf(&b, "%s%s %s -> %s", sep, c.Name, c.Old, c.New)
		if i == len(d.Changed)-1 || i == 2 {
			b.WriteString(")")
		}
	}
	fmt.Fprintf(&b, ", %d added, %d removed; vulnerabilities: %d fixed", len(d.Added), len(d.Removed), len(d.Fixed))
	for i, f := range d.Fixed {
		if i == 3 {
			break
		}
		fmt.Fprintf(&b, " %s", f.ID)
	}
	fmt.Fprintf(&b, ", %d new", len(d.Introduced))
	for i, f := range d.Introduced {
		if i == 3 {
			break
		}
		fmt.Fprintf(&b, " %s", f.ID)
	}
	fmt.Fprintf(&b, "; %d new layer(s), %s to pull", d.LayersAdded, Bytes(d.AddedBytes))
	return b.String()
}

// Bytes formats n in B, KiB, MiB, GiB or TiB with one decimal.
func Bytes(n int64) string {
	const unit = 1024
	if n < unit && n > -unit {
		return fmt.Sprintf("%d B", n)
	}
	f, suffix := float64(n), "KMGT"
	i := -1
	for (f >= unit || f <= -unit) && i < len(suffix)-1 {
		f /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", f, suffix[i])
}

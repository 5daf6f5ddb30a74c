package scan

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"sort"
	"strings"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/anchore/grype/grype"
	"github.com/anchore/grype/grype/match"
	"github.com/anchore/grype/grype/matcher"
	"github.com/anchore/grype/grype/pkg"
	"github.com/anchore/grype/grype/vulnerability"
	"github.com/google/go-containerregistry/pkg/name"

	"imagectl/internal/scan/report"
	"imagectl/internal/sign"
)

// ScannerURI names the scanner in results and attestations.
const ScannerURI = "pkg:golang/github.com/anchore/grype"

// ScannerVersion is the version of grype compiled in.
func ScannerVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/anchore/grype" {
				if d.Replace != nil {
					return d.Replace.Version
				}
				return d.Version
			}
		}
	}
	return "unknown"
}

// Image scans ref: it verifies ref's CycloneDX SBOM attestation with the
// public key in pubKeyPath (cosign verify-attestation --type cyclonedx),
// then matches the SBOM's packages against db. No verified SBOM is a
// *sign.NoAttestationError.
func Image(ctx context.Context, ref name.Digest, pubKeyPath string, db *DB, opts ...Option) (*Result, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	started := o.now().UTC()
	preds, err := sign.VerifyAttestations(ctx, ref, sign.CycloneDXPredicateType, pubKeyPath, sign.WithAccess(o.access))
	if err != nil {
		return nil, fmt.Errorf("scanning %s: reading its signed SBOM: %w", ref, err)
	}
	r, err := scanSBOM(ctx, preds[len(preds)-1], db, o)
	if err != nil {
		return nil, fmt.Errorf("scanning %s: %w", ref, err)
	}
	r.Image = ref.String()
	r.StartedOn = started
	r.FinishedOn = o.now().UTC()
	return r, nil
}

// SBOM scans the packages of a CycloneDX or SPDX JSON document against db.
func SBOM(ctx context.Context, doc []byte, db *DB, opts ...Option) (*Result, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	started := o.now().UTC()
	r, err := scanSBOM(ctx, doc, db, o)
	if err != nil {
		return nil, err
	}
	r.StartedOn, r.FinishedOn = started, o.now().UTC()
	return r, nil
}

func scanSBOM(ctx context.Context, doc []byte, db *DB, o *options) (*Result, error) {
	if err := db.CheckAge(o.now(), o.maxAge); err != nil {
		return nil, err
	}
	pkgs, pctx, _, err := pkg.ProvideFromReader(bytes.NewReader(doc), pkg.ProviderConfig{})
	if err != nil {
		return nil, fmt.Errorf("reading the SBOM: %w", err)
	}
	vm := grype.VulnerabilityMatcher{
		VulnerabilityProvider: db.provider,
		Matchers:              matcher.NewDefaultMatchers(matcher.Config{}),
	}
	remaining, _, err := vm.FindMatchesContext(ctx, pkgs, pctx)
	if err != nil {
		return nil, fmt.Errorf("matching against %s: %w", db.Source, err)
	}
	r := &Result{
		Scanner:  Scanner{URI: ScannerURI, Version: ScannerVersion()},
		DB:       DBInfo{URI: db.Source, Version: db.Version(), Built: db.Built, Digest: db.Digest, Schema: db.Schema},
		Packages: len(pkgs),
	}
	r.Product = productPURL(doc)
	for _, m := range remaining.Sorted() {
		r.Findings = append(r.Findings, finding(m))
	}
	if err := applyVEX(r, o.vex); err != nil {
		return nil, err
	}
	sortFindings(r.Findings)
	return r, nil
}

func finding(m match.Match) Finding {
	v := m.Vulnerability
	f := Finding{
		ID:        v.ID,
		Package:   m.Package.Name,
		Installed: m.Package.Version,
		Type:      string(m.Package.Type),
		PURL:      m.Package.PURL,
		Source:    v.Namespace,
		Severity:  "unknown",
	}
	if v.Fix.State == vulnerability.FixStateFixed {
		f.FixedIn = append([]string(nil), v.Fix.Versions...)
	}
	if md := v.Metadata; md != nil && md.Severity != "" {
		f.Severity = strings.ToLower(md.Severity)
	}
	for _, r := range v.RelatedVulnerabilities {
		if r.ID != v.ID {
			f.Aliases = append(f.Aliases, r.ID)
		}
	}
	sort.Strings(f.Aliases)
	f.Aliases = uniq(f.Aliases)
	return f
}

func uniq(s []string) []string {
	out := s[:0]
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}

func sortFindings(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if ra, rb := report.SeverityRank(a.Severity), report.SeverityRank(b.Severity); ra != rb {
			return ra > rb
		}
		if a.ID != b.ID {
			return a.ID < b.ID
		}
		return a.Package < b.Package
	})
}

// The result types live in package report (no scanner needed to read them).
type (
	Result      = report.Result
	Finding     = report.Finding
	Suppression = report.Suppression
	Scanner     = report.Scanner
	DBInfo      = report.DBInfo
)

// productPURL is the CycloneDX document's metadata.component purl (the
// image, pkg:oci/...), or "".
func productPURL(doc []byte) string {
	var bom cdx.BOM
	if err := json.Unmarshal(doc, &bom); err != nil || bom.Metadata == nil || bom.Metadata.Component == nil {
		return ""
	}
	return bom.Metadata.Component.PackageURL
}

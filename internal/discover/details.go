package discover

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"

	"imagectl/internal/scan/report"
	"imagectl/internal/sign"
)

// PlatformDetails is what the registry and the signed attestations say
// about one platform's image of a release.
type PlatformDetails struct {
	Platform string `json:"platform"`
	Digest   string `json:"digest"`
	// Size is the compressed size of its layers and config, bytes.
	Size   int64 `json:"size"`
	Layers int   `json:"layers"`
	// Packages counts its signed SPDX SBOM's packages by type (deb, pypi, ...).
	Packages map[string]int `json:"packages"`
	// Scan is its newest signed vulnerability scan (VEX applied); nil: none.
	Scan *ScanSummary `json:"scan,omitempty"`
	// Verification is its signed GPU verification; nil: none.
	Verification *Verification `json:"verification,omitempty"`
}

// Details reads, for each platform's image of d (d itself for a
// single-platform image, whose platform is platform), its size, SBOM
// package counts, newest scan and verification, each attestation verified
// under the keys.
func Details(ctx context.Context, d name.Digest, platform string, opts ...Option) ([]PlatformDetails, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	children, err := o.platforms(ctx, d)
	if err != nil {
		return nil, err
	}
	if children == nil {
		children = []sign.Child{{Platform: platform, Ref: d}}
	}
	var out []PlatformDetails
	for _, c := range children {
		pd := PlatformDetails{Platform: c.Platform, Digest: c.Ref.DigestStr(), Packages: map[string]int{}}
		layers, size, err := o.layers(ctx, c.Ref)
		if err != nil {
			return nil, err
		}
		pd.Size, pd.Layers = size, len(layers)
		if len(o.keys) > 0 {
			found, err := sign.InspectKeys(ctx, c.Ref, o.keys, o.signOptions()...)
			if err != nil {
				return nil, err
			}
			var latest *report.Result
			counted := false
			for _, f := range found {
				for _, pb := range f.Predicates[sign.SPDXPredicateType] {
					if counted {
						break
					}
					pkgs, err := spdxPackages(pb)
					if err != nil {
						return nil, fmt.Errorf("%s: %w", c.Ref, err)
					}
					for _, p := range pkgs {
						pd.Packages[p.Type]++
					}
					counted = true
				}
				for _, pb := range f.Predicates[report.VulnPredicateType] {
					if r, err := report.ParsePredicate(pb); err == nil && (latest == nil || r.FinishedOn.After(latest.FinishedOn)) {
						latest = r
					}
				}
			}
			if latest != nil {
				pd.Scan = summarizeScan(latest)
			}
		}
		if pd.Verification, err = o.verification(ctx, c.Ref); err != nil {
			return nil, err
		}
		out = append(out, pd)
	}
	return out, nil
}

package promote

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"imagectl/internal/lock"
	"imagectl/internal/scan/report"
	"imagectl/internal/sign"
	"imagectl/internal/spec"
)

// GateVulnerabilities: the digest's latest vuln attestation, signed by a
// trusted key, meets the image's policy { vulnerabilities { ... } }: no
// finding at or above max_severity (fixable ones only with fixable_only)
// outside the allow list, no outdated allow entry, a database no older
// than the limit when the scan ran.
const GateVulnerabilities Gate = "vulnerabilities"

// WithVulnerabilityPolicies turns the vulnerabilities gate on for the
// images (by name) that have a policy: spec.Policy.Vulnerabilities of each
// image, as the spec in git says today (the policy is not locked). The
// default is none: the gate is off.
func WithVulnerabilityPolicies(imgs ...spec.Image) Option {
	return func(o *options) error {
		if o.vulnPolicies == nil {
			o.vulnPolicies = map[string]report.Policy{}
		}
		for _, img := range imgs {
			if v := img.Policy.Vulnerabilities; v != nil {
				p := report.PolicyOf(v)
				if err := p.Validate(); err != nil {
					return fmt.Errorf("image %s: policy.vulnerabilities: %w", img.Name, err)
				}
				o.vulnPolicies[img.Name] = p
			}
		}
		return nil
	}
}

// vulnGate checks src against l's image's policy; nil when it has none.
// Of an image index (l has platforms) it checks each platform's image,
// which carries the SBOM and so the scan: every one must have a signed scan
// within the policy; the index itself is not scanned.
func (o *options) vulnGate(ctx context.Context, src name.Digest, l *lock.Lock) ([]Refusal, error) {
	if l == nil {
		return nil, nil
	}
	p, ok := o.vulnPolicies[l.Name]
	if !ok {
		return nil, nil
	}
	if len(l.Platforms) == 0 {
		return o.vulnCheck(ctx, src, src, "this digest", p)
	}
	sopts := []sign.Option{sign.WithAccess(o.access), sign.WithRemoteOptions(o.remote...)}
	children, err := sign.Children(ctx, src, l, sopts...)
	if err != nil {
		if ae := o.denied(err); ae != nil {
			return nil, ae
		}
		if unreachable(err) {
			return nil, unavailable(src, err)
		}
		return []Refusal{{Source: src.String(), Gate: GateVulnerabilities, Reason: fmt.Sprintf("the image index does not hold the lock's platforms: %v", err)}}, nil
	}
	var out []Refusal
	for _, c := range children {
		rr, err := o.vulnCheck(ctx, src, c.Ref, "the "+c.Platform+" image "+c.Ref.DigestStr(), p)
		if err != nil {
			return nil, err
		}
		out = append(out, rr...)
	}
	return out, nil
}

// vulnCheck gates ref (src itself, or one platform's image of the index
// src; what names it in reasons) on its latest vuln attestation by a
// trusted key.
func (o *options) vulnCheck(ctx context.Context, src, ref name.Digest, what string, p report.Policy) ([]Refusal, error) {
	refuse := func(reason string) Refusal {
		if ref.DigestStr() != src.DigestStr() {
			reason = what + ": " + reason
		}
		return Refusal{Source: src.String(), Gate: GateVulnerabilities, Reason: reason}
	}
	sopts := []sign.Option{sign.WithAccess(o.access), sign.WithRemoteOptions(o.remote...)}
	var latest *report.Result
	var errs []string
	for _, k := range o.trustedKeys {
		r, err := report.Latest(ctx, ref, k, sopts...)
		if err != nil {
			if ae := o.denied(err); ae != nil {
				return nil, ae
			}
			var none *sign.NoAttestationError
			if unreachable(err) && !errors.As(err, &none) {
				return nil, unavailable(src, err)
			}
			errs = append(errs, err.Error())
			continue
		}
		if latest == nil || r.FinishedOn.After(latest.FinishedOn) {
			latest = r
		}
	}
	if latest == nil {
		return []Refusal{refuse(fmt.Sprintf("no signed vulnerability scan of %s by a trusted key: run imagectl scan --attest (%s)", what, strings.Join(errs, "; ")))}, nil
	}
	var out []Refusal
	for _, v := range report.Evaluate(latest, p) {
		out = append(out, refuse(v.Reason))
	}
	return out, nil
}

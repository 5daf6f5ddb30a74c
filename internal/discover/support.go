package discover

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"imagectl/internal/exitcode"
	"imagectl/internal/sign"
)

// SupportPredicateType: the predicate is a release's support window
// (Support), signed by the release signing key when the release is
// promoted, so that users read it from the registry:
//
//	cosign verify-attestation --key cosign.pub --insecure-ignore-tlog --type https://imagectl.dev/attestations/support/v1 REPO@DIGEST
const SupportPredicateType = "https://imagectl.dev/attestations/support/v1"

// Support is how long a release is patched.
type Support struct {
	// Month is the release month, YYYY-MM.
	Month string `json:"month"`
	// Months is the spec policy's support_months.
	Months int `json:"support_months"`
	// End is the last day the release is supported, YYYY-MM-DD: the
	// last day of the Months-th month counting the release month.
	End string `json:"end"`
}

// NewSupport is the support window of a release of month (YYYY-MM) under
// a policy of months (> 0).
func NewSupport(month string, months int) (*Support, error) {
	if months <= 0 {
		return nil, fmt.Errorf("support_months %d: want a positive number of months", months)
	}
	start, err := time.Parse("2006-01", month)
	if err != nil {
		return nil, fmt.Errorf("release month %q: want YYYY-MM", month)
	}
	end := start.AddDate(0, months, -1)
	return &Support{Month: month, Months: months, End: end.Format(time.DateOnly)}, nil
}

// Predicate is s as the support attestation's predicate.
func (s *Support) Predicate() ([]byte, error) { return json.Marshal(s) }

// ParseSupport reads a support predicate.
func ParseSupport(b []byte) (*Support, error) {
	var s Support
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("reading the support predicate: %w", err)
	}
	if _, err := time.Parse(time.DateOnly, s.End); err != nil {
		return nil, fmt.Errorf("support predicate: end %q: want YYYY-MM-DD", s.End)
	}
	return &s, nil
}

// Support states.
const (
	// Supported: more than a month of the window is left.
	Supported = "supported"
	// Ending: the window ends within a month.
	Ending = "ending"
	// Expired: the window has ended; the release gets no more patches.
	Expired = "expired"
)

// State is Supported, Ending or Expired at now.
func (s *Support) State(now time.Time) string {
	end, err := time.Parse(time.DateOnly, s.End)
	if err != nil {
		return Supported
	}
	last := end.AddDate(0, 0, 1) // the first day after the window
	switch {
	case !now.Before(last):
		return Expired
	case !now.Before(last.AddDate(0, -1, 0)):
		return Ending
	}
	return Supported
}

// SupportOf reads d's support window from its support attestation signed
// by a signing key; nil when it has none (no window).
func SupportOf(ctx context.Context, d name.Digest, opts ...Option) (*Support, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	var best *Support
	for _, k := range o.keys {
		preds, err := sign.Attestations(ctx, d, k, o.signOptions()...)
		if err != nil {
			return nil, err
		}
		for _, b := range preds[SupportPredicateType] {
			if s, err := ParseSupport(b); err == nil && (best == nil || s.End > best.End) {
				best = s
			}
		}
	}
	return best, nil
}

// ExpiredError refuses a release whose support window has ended.
type ExpiredError struct {
	Ref     string
	Support Support
}

func (e *ExpiredError) Error() string {
	return fmt.Sprintf("%s: the release of %s is out of support since %s (support_months %d): bump to a newer release (imagectl releases, imagectl bump) or pass --accept-expired",
		e.Ref, e.Support.Month, e.Support.End, e.Support.Months)
}

// ExitCode implements exitcode.Coder: PromotionRefused, as pin's gates.
func (e *ExpiredError) ExitCode() int { return exitcode.PromotionRefused }

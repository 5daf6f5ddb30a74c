package discover

import (
	"encoding/json"
	"fmt"
	"time"
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

package scan

import (
	"testing"
	"time"
)

func TestExpired(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.DateOnly, s)
		if err != nil {
			t.Fatal(err)
		}
		return v.Add(12 * time.Hour)
	}
	for _, tc := range []struct {
		end, now string
		want     bool
	}{
		{"", "2030-01-01", false},
		{"2026-11-30", "2026-11-30", false},
		{"2026-11-30", "2026-12-01", true},
		{"2027-10-31", "2026-12-04", false},
	} {
		if got := expired(tc.end, at(tc.now)); got != tc.want {
			t.Errorf("expired(%q, %s) = %v, want %v", tc.end, tc.now, got, tc.want)
		}
	}
}

package result

import "testing"

func TestAgainst(t *testing.T) {
	const d, l = "sha256:aa", "sha256:11"
	pass := Result{Digest: d, LockDigest: l, Passed: true}
	failed := Result{Digest: d, LockDigest: l, Checks: []Check{{Name: "torch.cuda", Status: Fail}, {Name: "python", Status: Pass}}}
	for _, tc := range []struct {
		name       string
		r          Result
		digest, lk string
		want       string
	}{
		{"passing", pass, d, l, ""},
		{"another digest", pass, "sha256:bb", l, "the verification result is for sha256:aa, not this digest"},
		{"failed", failed, d, l, "verification failed (failed checks: torch.cuda)"},
		{"no lock", pass, d, "", "no lock to compare the verified lock with"},
		{"another lock", pass, d, "sha256:22", "verified against lock sha256:11, but the lock is sha256:22"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.Against(tc.digest, tc.lk); got != tc.want {
				t.Errorf("Against(%q, %q) = %q, want %q", tc.digest, tc.lk, got, tc.want)
			}
		})
	}
}

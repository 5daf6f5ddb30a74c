package promote_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"imagectl/internal/exitcode"
	"imagectl/internal/lock"
	"imagectl/internal/promote"
	"imagectl/internal/sign"
)

// An image missing any single attestation of sign.ReleaseAttestations
// (everything else in place) is refused, exit 5, by exactly one refusal
// that names what is missing; nothing reaches the release repository.
func TestGateRefusesEachMissingAttestation(t *testing.T) {
	reg := newInProcessRegistry(t)
	for _, a := range sign.ReleaseAttestations {
		t.Run(a.Name, func(t *testing.T) {
			f := newFixture(t, reg)
			f.release = reg + "/missing/" + slug(a.Name)
			d := f.push(1)
			f.sign(d, f.signer)
			if a.PredicateType != sign.LockPredicateType {
				f.attestLock(d, f.lock, f.signer)
			}
			f.attestBuild(d, f.signer, a.PredicateType)
			// The verifier's attestations but the missing one.
			var ver []string
			for _, v := range sign.Required(sign.VerifierKey, false) {
				if v.PredicateType != a.PredicateType {
					ver = append(ver, v.PredicateType)
				}
			}
			f.attestVerificationAs(d, f.passing(d), f.ver, ver...)
			path := f.releaseFile(nil, rel(d.String(), "2026-12", "2.6-cu124-2026.12"))
			_, err := promote.Run(context.Background(), path, f.opts(promote.WithConfirm(true))...)
			var re *promote.RefusedError
			if !errors.As(err, &re) || exitcode.Code(err) != exitcode.PromotionRefused {
				t.Fatalf("Run(without the %s attestation) = %v (exit %d), want a refusal (exit %d)", a.Name, err, exitcode.Code(err), exitcode.PromotionRefused)
			}
			want := map[string]promote.Gate{sign.LockPredicateType: promote.GateLock, sign.VerificationPredicateType: promote.GateVerification}[a.PredicateType]
			if want == "" {
				want = promote.GateAttestations
			}
			if len(re.Refusals) != 1 || re.Refusals[0].Gate != want || !strings.Contains(re.Refusals[0].Reason, a.Name) {
				t.Errorf("refusals = %v, want one by gate %s naming %q", re.Refusals, want, a.Name)
			}
			if got := f.state(d); len(got) != 0 {
				t.Errorf("release repository after the refusal = %v, want empty", got)
			}
		})
	}
	t.Run("complete", func(t *testing.T) {
		f := newFixture(t, reg)
		f.release = reg + "/missing/none"
		d := f.good()
		path := f.releaseFile(nil, rel(d.String(), "2026-12", "2.6-cu124-2026.12"))
		if _, err := promote.Run(context.Background(), path, f.opts(promote.WithConfirm(true))...); err != nil {
			t.Fatalf("Run(every attestation) = %v, want nil", err)
		}
	})
}

// Last month's release is gated against the lock it records, not today's:
// re-signing its digest (a new signature to copy along) or a changed
// repos.release (everything copied to the new repository) makes it need
// an action, and this month still promotes. Without its lock_digest the
// old release is held to today's lock and refused, which blocked the month.
func TestOldMonthGatedAgainstItsOwnLock(t *testing.T) {
	reg := newInProcessRegistry(t)
	for _, tc := range []struct {
		name        string
		newRepo     bool // repos.release changed this month
		resign      bool // the old digest got another signature
		recordLocks bool // the releases carry lock_digest
		wantRefused bool
	}{
		{name: "re-signed old digest", resign: true, recordLocks: true},
		{name: "changed repos.release", newRepo: true, recordLocks: true},
		{name: "changed repos.release, no lock_digest", newRepo: true, wantRefused: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f := newFixture(t, reg)
			f.release = reg + "/old-month/" + slug(tc.name)
			lockPath := filepath.Join(f.dir, lock.FileName)
			nov := mustLock(t, lockPath)
			old := f.good()
			oldRel := rel(old.String(), "2026-11", "2.6-cu124-2026.11")
			if tc.recordLocks {
				oldRel.LockDigest = nov.Digest
			}
			path := f.releaseFile(map[string]string{"2.6-cu124": old.DigestStr()}, oldRel)
			if _, err := promote.Run(ctx, path, f.opts(promote.WithConfirm(true))...); err != nil {
				t.Fatalf("November's Run = %v", err)
			}

			// December: a new lock in git, a new image built from it.
			dec := testLock()
			dec.Pip[0].Version = "2.0.0"
			if err := lock.Write(lockPath, dec); err != nil {
				t.Fatal(err)
			}
			f.lock = mustLock(t, lockPath)
			cur := f.good()
			if tc.resign {
				f.sign(old, f.other)
			}
			if tc.newRepo {
				f.release = reg + "/old-month-moved/" + slug(tc.name)
			}
			curRel := rel(cur.String(), "2026-12", "2.6-cu124-2026.12")
			if tc.recordLocks {
				curRel.LockDigest = f.lock.Digest
			}
			path = f.releaseFile(map[string]string{"2.6-cu124": cur.DigestStr()}, oldRel, curRel)
			res, err := promote.Run(ctx, path, f.opts(promote.WithConfirm(true))...)
			if tc.wantRefused {
				var re *promote.RefusedError
				if !errors.As(err, &re) || !re.Has(promote.GateLock) || !strings.Contains(err.Error(), old.DigestStr()) {
					t.Fatalf("December's Run = %v, want the old release refused by the lock gate", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("December's Run = %v, want nil (the old release gated against its own lock %s)", err, nov.Digest)
			}
			if !slices.Contains(res.Gated, old.String()) {
				t.Errorf("Gated = %v, want the old release %s gated (it needed an action)", res.Gated, old)
			}
			for tag, want := range map[string]name.Digest{"2.6-cu124-2026.11": old, "2.6-cu124-2026.12": cur, "2.6-cu124": cur} {
				got, err := remote.Head(mustTag(t, f.release+":"+tag))
				if err != nil || got.Digest.String() != want.DigestStr() {
					t.Errorf("%s:%s = %v, %v; want %s", f.release, tag, got, err, want.DigestStr())
				}
			}
		})
	}
}

func mustLock(t *testing.T, path string) *lock.Lock {
	t.Helper()
	l, err := lock.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// slug is s as a repository path component.
func slug(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '-'
	}, s)
}

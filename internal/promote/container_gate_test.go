package promote_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"imagectl/internal/promote"
	"imagectl/internal/verify"
)

// TestRequireContainerRuntime: with the option, a passing in-place result
// is refused by the verification gate, naming the runtime; a result of
// containerd that started the digest passes. Without it both pass.
func TestRequireContainerRuntime(t *testing.T) {
	reg := newInProcessRegistry(t)
	f := newFixture(t, reg)
	inPlace := f.good() // its result ran in-place
	ctr := f.push(2)
	f.sign(ctr, f.signer)
	f.attestLock(ctr, f.lock, f.signer)
	f.attestBuild(ctr, f.signer)
	r := f.passing(ctr)
	r.Runtime, r.Proof = verify.RuntimeContainerd, verify.ProofRuntime
	f.attestVerification(ctr, r, f.ver)

	for _, tc := range []struct {
		name    string
		src     string
		require bool
		refused bool
	}{
		{"in-place, not required", inPlace.String(), false, false},
		{"in-place, required", inPlace.String(), true, true},
		{"containerd, required", ctr.String(), true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := f.releaseFile(nil, rel(tc.src, "2026-12", "2.6-cu124-2026.12"))
			_, err := promote.Run(context.Background(), path, f.opts(promote.WithRequireContainerRuntime(tc.require))...)
			var re *promote.RefusedError
			switch {
			case tc.refused && (!errors.As(err, &re) || !re.Has(promote.GateVerification) || !strings.Contains(err.Error(), "requires a container runtime")):
				t.Errorf("Run() = %v, want a verification-gate refusal naming the container runtime", err)
			case !tc.refused && err != nil:
				t.Errorf("Run() = %v, want nil (dry run)", err)
			}
		})
	}
}

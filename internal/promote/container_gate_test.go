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
// containerd that started the digest, or of a Kubernetes Job whose pod's
// imageID names it, passes; a Job log without a proof is refused. Without
// the option they all pass.
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
	// A Kubernetes Job whose pod's imageID (read from the API server) is the digest.
	job := f.push(3)
	f.sign(job, f.signer)
	f.attestLock(job, f.lock, f.signer)
	f.attestBuild(job, f.signer)
	kr := f.passing(job)
	kr.Runtime, kr.Proof = verify.RuntimeKubernetes, verify.ProofRuntime
	kr.Pod = &verify.PodRun{Namespace: "gpu", Job: "imagectl-verify-x", Name: "imagectl-verify-x-abcde", UID: "u-1", Node: "h200-1", ImageID: job.String()}
	f.attestVerification(job, kr, f.ver)
	// A Job log given back by hand (--job-log): no proof, so never accepted.
	logged := f.push(4)
	f.sign(logged, f.signer)
	f.attestLock(logged, f.lock, f.signer)
	f.attestBuild(logged, f.signer)
	lr := f.passing(logged)
	lr.Runtime = verify.RuntimeKubernetes
	f.attestVerification(logged, lr, f.ver)

	for _, tc := range []struct {
		name    string
		src     string
		require bool
		refused bool
	}{
		{"in-place, not required", inPlace.String(), false, false},
		{"in-place, required", inPlace.String(), true, true},
		{"containerd, required", ctr.String(), true, false},
		{"kubernetes Job proven by the kubelet's imageID, required", job.String(), true, false},
		{"kubernetes Job log without proof, required", logged.String(), true, true},
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

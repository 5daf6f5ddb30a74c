package verify

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// digestRuntime is a fake container runtime that started ran.
type digestRuntime struct {
	fakeRuntime
	ran string
}

func (r *digestRuntime) RanDigest() string { return r.ran }

// withFingerprintDigest returns the env probe's line with the init's
// fingerprint naming digest.
func withFingerprintDigest(t *testing.T, out map[string]string, digest string) map[string]string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out["env"]), "\n")
	var env map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &env); err != nil {
		t.Fatal(err)
	}
	fp := env["fingerprint"].(map[string]any)
	fp["content"].(map[string]any)["image_digest"] = digest
	cp := map[string]string{}
	for k, v := range out {
		cp[k] = v
	}
	cp["env"] = mustJSON(t, env)
	return cp
}

// TestRunProof: a result carries a proof only when the runtime started the
// digest, or the init's fingerprint in the probes' environment names it;
// Signable (and so Attest) refuses the others.
func TestRunProof(t *testing.T) {
	l := readLock(t, "testdata/h200-torch2.11-cu130.lock.json")
	other := "sha256:" + strings.Repeat("cd", 32)
	base := machine(t, l, 2)
	log := func(out map[string]string) []byte {
		var b strings.Builder
		for _, n := range []string{"env", "torch", "allreduce", "compile-cold", "compile-warm"} {
			b.WriteString(out[n] + "\n")
		}
		return []byte(b.String())
	}
	for _, tc := range []struct {
		name      string
		rt        Runtime
		prober    GPUProber
		wantProof string
	}{
		{"containerd started the digest", &digestRuntime{fakeRuntime: fakeRuntime{out: base}, ran: testRef.DigestStr()}, fakeProber{h: h200s(2)}, ProofRuntime},
		{"a runtime that started another digest", &digestRuntime{fakeRuntime: fakeRuntime{out: base}, ran: other}, fakeProber{h: h200s(2)}, ""},
		{"in-place without the digest in the fingerprint", &fakeRuntime{out: base}, fakeProber{h: h200s(2)}, ""},
		{"in-place, the fingerprint names the digest", &fakeRuntime{out: withFingerprintDigest(t, base, testRef.DigestStr())}, fakeProber{h: h200s(2)}, ProofFingerprint},
		{"in-place, the fingerprint names another digest", &fakeRuntime{out: withFingerprintDigest(t, base, other)}, fakeProber{h: h200s(2)}, ""},
		{"a Job log without the fingerprint's digest", &Recorded{Log: log(base)}, nil, ""},
		// The digest in a copied-back log is only what the Job's environment said.
		{"a Job log, even with the Job's image digest", &Recorded{Log: log(withFingerprintDigest(t, base, testRef.DigestStr()))}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, _ := Run(context.Background(), l, WithRuntime(tc.rt), WithGPUProber(tc.prober), WithImage(testRef))
			if res == nil {
				t.Fatal("Run() returned no result")
			}
			if res.Proof != tc.wantProof {
				t.Errorf("Run() proof = %q, want %q", res.Proof, tc.wantProof)
			}
			err := res.Signable(testRef.DigestStr())
			var ue *UnsignableError
			if tc.wantProof == "" && !errors.As(err, &ue) {
				t.Errorf("Signable() = %v, want *UnsignableError", err)
			}
			if tc.wantProof != "" && err != nil {
				t.Errorf("Signable() = %v, want nil", err)
			}
		})
	}
}

package verify

import (
	"encoding/json"
	"fmt"
	"time"

	"imagectl/internal/sign"
)

// PredicateType is the in-toto predicate type of a verification result
// attestation. Promotion requires one, passing, for exactly the digest.
const PredicateType = sign.VerificationPredicateType

// The proofs a Result can carry (Result.Proof).
const (
	ProofRuntime     = "runtime"
	ProofFingerprint = "fingerprint"
)

// Status is the outcome of one check.
type Status string

const (
	Pass Status = "pass"
	Fail Status = "fail"
	Skip Status = "skip"
)

// Result is the outcome of verifying one image digest. It is the predicate
// of the verification attestation.
type Result struct {
	// Image is the verified reference, repo@sha256:...
	Image string `json:"image"`
	// Digest is the image's manifest digest, sha256:...
	Digest string `json:"digest"`
	// LockDigest is the digest of the lock the image was checked against.
	LockDigest string `json:"lock_digest"`
	// Runtime is how the checks ran: in-place, containerd, podman, docker,
	// kubernetes.
	Runtime string `json:"runtime"`
	// Proof says what ties the probes to Digest: ProofRuntime (a container
	// runtime started the image by that digest; for a Kubernetes Job, the
	// kubelet's imageID read from the API server), ProofFingerprint (the
	// init's fingerprint in the probes' environment names that digest), or
	// empty: nothing does, and the result is reported but never signed.
	Proof string `json:"proof,omitempty"`
	// Passed is true when no check failed.
	Passed bool `json:"passed"`
	// Checks are every check, in the order they ran.
	Checks []Check `json:"checks"`
	// Host is the GPU fingerprint of the machine the checks ran on.
	Host Host `json:"host"`
	// Pod, for the kubernetes runtime, is the pod the kubelet ran the
	// probes in, read from the API server: its UID, node and the imageID
	// whose digest the runtime proof (ProofRuntime) compares with Digest.
	Pod *PodRun `json:"pod,omitempty"`
	// Platforms, for a multi-platform image (verify.WithTarget), are its
	// platforms: the one that ran here with its outcome, the others "not
	// verified". Index is then the image index; Image and Digest are the
	// host platform's image, the one the result is bound to.
	Platforms []PlatformStatus `json:"platforms,omitempty"`
	Index     string           `json:"index,omitempty"`
	// Startup, with WithStartup, is the image's first step timed from the
	// runtime's first call (pull included).
	Startup *Startup `json:"startup,omitempty"`
	// StartedAt and Duration bound the run.
	StartedAt time.Time `json:"started_at"`
	Duration  string    `json:"duration"`
}

// Check is one named check.
type Check struct {
	Name      string  `json:"name"`
	Status    Status  `json:"status"`
	Value     string  `json:"value,omitempty"`
	Threshold string  `json:"threshold,omitempty"`
	Detail    string  `json:"detail,omitempty"`
	Seconds   float64 `json:"seconds"`
}

// Host holds what the host told about its GPUs.
type Host struct {
	Hostname      string `json:"hostname,omitempty"`
	DriverVersion string `json:"driver_version,omitempty"`
	CUDADriver    string `json:"cuda_driver,omitempty"`
	GPUs          []GPU  `json:"gpus,omitempty"`
}

// GPU is one visible GPU.
type GPU struct {
	Index             int    `json:"index"`
	UUID              string `json:"uuid"`
	Name              string `json:"name"`
	ComputeCapability string `json:"compute_capability"`
	MemoryMiB         uint64 `json:"memory_mib"`
	MIG               bool   `json:"mig"`
	NVLinks           int    `json:"nvlinks"`
}

// DigestRunner is a Runtime that starts the image by its digest.
type DigestRunner interface {
	// RanDigest is the digest the runtime started ("" when it started
	// none, or something that is not a digest).
	RanDigest() string
}

// proof returns what ties the probes that ran through rt, whose env probe
// printed e, to digest.
func proof(rt Runtime, e envOut, digest string) string {
	if digest == "" {
		return ""
	}
	if dr, ok := rt.(DigestRunner); ok && dr.RanDigest() == digest {
		return ProofRuntime
	}
	if _, ok := rt.(*Recorded); ok {
		// A log copied back by hand: the fingerprint in it names what the
		// Job's environment said (IMAGECTL_IMAGE_DIGEST), which proves
		// nothing about what the kubelet ran.
		return ""
	}
	if fingerprintDigest(e) == digest {
		return ProofFingerprint
	}
	return ""
}

// fingerprintDigest is the image_digest of the init's fingerprint the env
// probe read, or "".
func fingerprintDigest(e envOut) string {
	if !e.Fingerprint.Present || e.Fingerprint.Error != "" {
		return ""
	}
	var fp struct {
		ImageDigest string `json:"image_digest"`
	}
	if json.Unmarshal(e.Fingerprint.Content, &fp) != nil {
		return ""
	}
	return fp.ImageDigest
}

// Signable returns nil when r may be signed as the verification of
// digest: the result is for that digest and something proves the probes
// ran inside it (Proof). Otherwise an *UnsignableError says why.
func (r *Result) Signable(digest string) error {
	switch {
	case r == nil:
		return &UnsignableError{Digest: digest, Reason: "there is no verification result"}
	case r.Digest != digest:
		return &UnsignableError{Digest: digest, Reason: fmt.Sprintf("the result is for digest %q", r.Digest)}
	case r.Proof != ProofRuntime && r.Proof != ProofFingerprint:
		why := fmt.Sprintf("nothing shows the probes ran inside it: the %s runtime did not start it by digest and no init fingerprint in the probes' environment names it", r.Runtime)
		return &UnsignableError{Digest: digest, Reason: why}
	}
	return nil
}

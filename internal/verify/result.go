package verify

import "time"

// PredicateType is the in-toto predicate type of a verification result
// attestation. Promotion requires one, passing, for exactly the digest.
const PredicateType = "https://imagectl.dev/attestations/verification/v1"

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
	// Runtime is how the checks ran: in-place, podman, docker, kubernetes.
	Runtime string `json:"runtime"`
	// Passed is true when no check failed.
	Passed bool `json:"passed"`
	// Checks are every check, in the order they ran.
	Checks []Check `json:"checks"`
	// Host is the GPU fingerprint of the machine the checks ran on.
	Host Host `json:"host"`
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

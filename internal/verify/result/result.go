// Package result is a verification's outcome: the Result that the verifier
// signs as an attestation (PredicateType) and as an in-toto test result
// (TestResultPredicateType), and that promotion, the release and the
// admission policies read back. It is a leaf: it imports neither
// internal/verify's runtimes (containerd, client-go, NVML) nor cosign, so
// that a package that only reads results stays light (deps_test.go).
package result

import (
	"fmt"
	"strings"
	"time"

	"imagectl/internal/exitcode"
)

// PredicateType is the in-toto predicate type of a verification result
// attestation. Promotion requires one, passing, for exactly the digest.
const PredicateType = "https://imagectl.dev/attestations/verification/v1"

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
	// Startup, with verify.WithStartup, is the image's first step timed
	// from the runtime's first call (pull included).
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

// Platform statuses in Result.Platforms.
const (
	PlatformVerified    = "verified"
	PlatformFailed      = "failed"
	PlatformNotVerified = "not verified"
)

// PlatformStatus is one platform of a multi-platform image in a result.
type PlatformStatus struct {
	// Platform is "linux/arm64".
	Platform string `json:"platform"`
	// Digest is that platform's image inside the index.
	Digest string `json:"digest"`
	// Status is PlatformVerified or PlatformFailed for the platform that
	// ran, PlatformNotVerified for the others.
	Status string `json:"status"`
}

// PodRun is where the kubelet ran the probes, as the API server reports
// it: the proof of a Kubernetes verification.
type PodRun struct {
	Namespace string `json:"namespace"`
	Job       string `json:"job"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
	Node      string `json:"node"`
	// ImageID is the container's status.containerStatuses[].imageID: the
	// image the kubelet ran, repo@sha256:... .
	ImageID string `json:"image_id"`
}

// The runtimes by name, as --runtime takes them and Result.Runtime records
// them.
const (
	RuntimeAuto       = "auto"
	RuntimeInPlace    = "in-place"
	RuntimeContainerd = "containerd"
	RuntimePodman     = "podman"
	RuntimeDocker     = "docker"
	RuntimeKubernetes = "kubernetes"
)

// IsContainerRuntime reports whether the runtime named starts the image,
// by digest, in a container of its own for the probes (containerd, podman,
// docker, a Kubernetes Job), rather than running them in imagectl's own
// environment.
func IsContainerRuntime(runtime string) bool {
	switch runtime {
	case RuntimeContainerd, RuntimePodman, RuntimeDocker, RuntimeKubernetes:
		return true
	}
	return false
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

// Against returns "" when r is a passing verification of exactly digest
// against the lock lockDigest, else why not ("verification failed (failed
// checks: ...)", "verified against lock ..."): the one rule by which the
// release's resume (release.Real.Verified) and promotion's gate accept a
// verification. The gate asks more of it (a container runtime's proof,
// promote.WithRequireContainer).
func (r *Result) Against(digest, lockDigest string) string {
	switch {
	case r.Digest != digest:
		return fmt.Sprintf("the verification result is for %s, not this digest", r.Digest)
	case !r.Passed:
		return fmt.Sprintf("verification failed (%s)", r.failedChecks())
	case lockDigest == "":
		return "no lock to compare the verified lock with"
	case r.LockDigest != lockDigest:
		return fmt.Sprintf("verified against lock %s, but the lock is %s", r.LockDigest, lockDigest)
	}
	return ""
}

func (r *Result) failedChecks() string {
	var names []string
	for _, c := range r.Checks {
		if c.Status == Fail {
			names = append(names, c.Name)
		}
	}
	if len(names) == 0 {
		return "passed=false"
	}
	return "failed checks: " + strings.Join(names, ", ")
}

// UnsignableError is a result that must not be signed as the verification
// of Digest: it is reported, not attested. Its exit code is
// exitcode.Failure.
type UnsignableError struct {
	Digest string
	Reason string
}

func (e *UnsignableError) Error() string {
	return fmt.Sprintf("not signing the verification of %s: %s", e.Digest, e.Reason)
}

// ExitCode implements exitcode.Coder.
func (e *UnsignableError) ExitCode() int { return exitcode.Failure }

// Startup is the image's first step as a workload meets it (verify.WithStartup):
// from the runtime's first call (the pull and unpack, or a lazy pull's
// mount) to the end of a first matmul after `import torch` (for a lock
// without torch: the interpreter's start; Device "none").
type Startup struct {
	// Seconds is the whole: pull, container start, import, first step.
	Seconds float64 `json:"seconds"`
	// PullSeconds is the runtime's pull and unpack (or lazy mount), when
	// the runtime reports it (containerd); 0 otherwise.
	PullSeconds float64 `json:"pull_seconds,omitempty"`
	// ImportSeconds and StepSeconds are the probe's own: from the
	// interpreter's start to the end of `import torch`, then the matmul.
	ImportSeconds float64 `json:"import_seconds"`
	StepSeconds   float64 `json:"step_seconds"`
	// Device is where the matmul ran: cuda or cpu; "none" without torch.
	Device string `json:"device"`
	// FileCount is len(Files).
	FileCount int `json:"file_count"`
	// Files are the image's files the process had open after the step, in
	// the order they came (imported modules, then mapped files): the
	// prioritized files of an eStargz build. Not in the JSON result (see
	// `imagectl verify --startup-files`).
	Files []string `json:"-"`
}

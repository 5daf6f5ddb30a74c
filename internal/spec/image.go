package spec

import (
	"imagectl/internal/compat"
	"imagectl/internal/initconfig"
)

// Image is one concrete image: a spec's image block with its defaults
// applied, its variables and functions evaluated and one matrix combination
// chosen. It is what the lock stage resolves.
type Image struct {
	// Name is unique across all loaded specs, e.g. "pytorch-2.6-cu118-py3.11".
	Name string `json:"name"`
	// File, Line and Column locate the image block that produced this image.
	File   string `json:"file"`
	Line   int    `json:"line"`
	Column int    `json:"column"`
	// Matrix is the combination that produced this image (empty without a matrix).
	Matrix map[string]string `json:"matrix,omitempty"`

	// Base is the base image reference (tag or digest).
	Base string `json:"base"`
	// CUDA is the base's CUDA toolkit version ("12.1"); empty for CPU-only images.
	CUDA string `json:"cuda,omitempty"`
	// Torch is the torch release ("2.6.0"); empty when the image carries no torch.
	Torch string `json:"torch,omitempty"`
	// TorchVariant is the wheel variant ("cu118", "cu124", "cpu"). A spec
	// that leaves it out gets "cu" + CUDA without the dot ("cpu" without
	// CUDA); a spec sets it to run e.g. cu124 wheels on a 12.1 base under
	// minor-version compatibility. Load always fills it when Torch is set.
	TorchVariant string `json:"torch_variant,omitempty"`
	// Platforms are the OCI platforms the image is locked and built for
	// ("linux/amd64", "linux/arm64"), sorted. Load fills in
	// ["linux/amd64"] when the spec names none.
	Platforms []string `json:"platforms,omitempty"`
	// Python is the interpreter's minor version ("3.11").
	Python string `json:"python"`
	// NCCL and CUDNN are the versions the torch wheel pins. Load checks a
	// spec's values against the catalog and fills them from the chosen wheel
	// when the spec leaves them out (empty for CPU images).
	NCCL  string `json:"nccl,omitempty"`
	CUDNN string `json:"cudnn,omitempty"`
	// DriverFloor is the lowest NVIDIA driver the image supports ("525.60.13").
	// Required with CUDA; Load checks it against the catalog and copies it
	// to Runtime.DriverFloor.
	DriverFloor string `json:"driver_floor,omitempty"`

	// Apt lists Debian packages, "name" or "name=version".
	Apt []string `json:"apt,omitempty"`
	// Pip lists requirement specifiers ("numpy==1.26.4", "requests>=2").
	Pip []string `json:"pip,omitempty"`
	// PipIndexes are index URLs for pip, in order; the torch variant's index
	// is added from the catalog when Torch is set.
	PipIndexes []string `json:"pip_indexes,omitempty"`
	// TorchIndex is the base URL of the PyTorch wheel index; the lock stage
	// appends the variant's path from the catalog (compat.IndexPath, e.g.
	// "whl/cu124"). Empty when the image has no torch or the spec leaves it
	// to the user (then locking a torch image fails and says so).
	TorchIndex string `json:"torch_index,omitempty"`
	// Frozen are package names that a monthly refresh must not move, in
	// addition to the always-frozen core (torch, CUDA, Python minor).
	Frozen []string `json:"frozen,omitempty"`

	Env    map[string]string `json:"env,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`

	// Repos are the target repositories.
	Repos Repos `json:"repos"`
	// Runtime is the init's configuration, baked into the image.
	Runtime initconfig.Config `json:"runtime"`
	// Verify holds the verification thresholds.
	Verify Verify `json:"verify"`
	// Policy holds image policy rules checked at lock and build time.
	Policy Policy `json:"policy"`
}

// Repos are where an image is pushed and released.
type Repos struct {
	// Staging receives every build, by digest.
	Staging string `json:"staging"`
	// Release receives promoted digests and their release tags.
	Release string `json:"release"`
	// Mirror is the repository prefix the base is mirrored under
	// (internal/mirror); empty when builds pull the base from Base itself.
	Mirror string `json:"mirror,omitempty"`
}

// Verify holds the thresholds of the verify stage.
type Verify struct {
	// CPUOnly marks an image that needs no GPU: GPU checks are skipped, not failed.
	CPUOnly bool `json:"cpu_only,omitempty"`
	// MinGPUs is the smallest GPU count verification accepts. The default is 1.
	MinGPUs int `json:"min_gpus,omitempty"`
	// MinBusBandwidthGBps is the all-reduce bus bandwidth floor in GB/s; 0 skips the floor.
	MinBusBandwidthGBps float64 `json:"min_busbw_gbps,omitempty"`
	// AllReduceBytes is the all-reduce message size. The default is 256 MiB.
	AllReduceBytes int64 `json:"allreduce_bytes,omitempty"`
	// CompileCache turns the torch.compile cache-reuse check on.
	CompileCache bool `json:"compile_cache,omitempty"`
	// Timeout bounds the whole verification. The default is 10m.
	Timeout initconfig.Duration `json:"timeout,omitempty"`
}

// Policy holds image policy rules.
type Policy struct {
	// SSHKeyOnly requires that an installed sshd disables password logins.
	SSHKeyOnly bool `json:"ssh_key_only,omitempty"`
	// ForbiddenPackages must not be present in the resolved apt or pip closure.
	ForbiddenPackages []string `json:"forbidden_packages,omitempty"`
	// Vulnerabilities is the promotion gate on the image's signed scan;
	// nil without a vulnerabilities block. It is read from the spec at
	// promotion and is no lock input: editing an allow list never stales
	// a lock or needs a rebuild.
	Vulnerabilities *VulnerabilityPolicy `json:"vulnerabilities,omitempty"`
	// SupportMonths is how long a release is patched, counting its release
	// month; 0: no support window. Read at promotion (the signed support
	// attestation, the release file's support_end), no lock input.
	SupportMonths int `json:"support_months,omitempty"`
}

// VulnerabilityPolicy is the spec's policy { vulnerabilities { ... } }.
type VulnerabilityPolicy struct {
	// MaxSeverity: a finding of this severity or above refuses promotion.
	// The default is "high".
	MaxSeverity string `json:"max_severity,omitempty"`
	// FixableOnly: only findings with a known fix refuse.
	FixableOnly bool `json:"fixable_only,omitempty"`
	// Allow lists vulnerability IDs that do not refuse.
	Allow []string `json:"allow,omitempty"`
	// MaxDBAge is the oldest database a scan may have used. The default is 120h.
	MaxDBAge initconfig.Duration `json:"max_db_age,omitempty"`
}

func (p *Policy) vulns() *VulnerabilityPolicy {
	if p.Vulnerabilities == nil {
		p.Vulnerabilities = &VulnerabilityPolicy{}
	}
	return p.Vulnerabilities
}

// CompatRequest is what the compatibility catalog is asked about img: the
// spec's checks and the lock's core both ask it the same question.
func (img Image) CompatRequest() compat.Request {
	return compat.Request{
		CUDA: img.CUDA, Torch: img.Torch, TorchVariant: img.TorchVariant, Python: img.Python,
		NCCL: img.NCCL, CUDNN: img.CUDNN, DriverFloor: img.DriverFloor, Platforms: img.Platforms,
	}
}

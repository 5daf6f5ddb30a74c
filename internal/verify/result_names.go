package verify

import "imagectl/internal/verify/result"

// A verification's outcome lives in the leaf package internal/verify/result,
// so that promotion, the release and the admission policies read results
// without linking the runtimes (containerd, client-go, NVML). These names
// keep verify's own code and its callers reading as before.
type (
	Result          = result.Result
	Check           = result.Check
	Status          = result.Status
	Host            = result.Host
	GPU             = result.GPU
	PlatformStatus  = result.PlatformStatus
	PodRun          = result.PodRun
	Category        = result.Category
	UnsignableError = result.UnsignableError
	Startup         = result.Startup
)

const (
	PredicateType           = result.PredicateType
	TestResultPredicateType = result.TestResultPredicateType
	TestResultPassed        = result.TestResultPassed
	TestResultFailed        = result.TestResultFailed

	ProofRuntime     = result.ProofRuntime
	ProofFingerprint = result.ProofFingerprint

	Pass = result.Pass
	Fail = result.Fail
	Skip = result.Skip

	PlatformVerified    = result.PlatformVerified
	PlatformFailed      = result.PlatformFailed
	PlatformNotVerified = result.PlatformNotVerified

	RuntimeAuto       = result.RuntimeAuto
	RuntimeInPlace    = result.RuntimeInPlace
	RuntimeContainerd = result.RuntimeContainerd
	RuntimePodman     = result.RuntimePodman
	RuntimeDocker     = result.RuntimeDocker
	RuntimeKubernetes = result.RuntimeKubernetes

	CheckAllReduce      = result.CheckAllReduce
	CheckAllReduceBusBW = result.CheckAllReduceBusBW
	CheckCompileCache   = result.CheckCompileCache
	CheckFirstStep      = result.CheckFirstStep

	CategoryMeasurement = result.CategoryMeasurement
	CategoryHost        = result.CategoryHost
	CategoryImage       = result.CategoryImage
)

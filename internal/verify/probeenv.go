package verify

import "sort"

// ProbeMount is where container runtimes mount the probe scripts (ProbeDir)
// inside the image.
const ProbeMount = "/imagectl-probes"

// PassEnv are passed from imagectl's environment into every probe
// container; where imagectl's environment does not set one, the value
// here is. They keep NVLink multicast off in NCCL, PyTorch and NVSHMEM:
// on hosts whose GPUs others share, a program that uses it can take them
// out of service.
var PassEnv = map[string]string{
	"NCCL_NVLS_ENABLE":                 "0",
	"TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
	"NVSHMEM_DISABLE_NVLS":             "1",
}

// ProbeEnv is the environment every probe container gets on top of the
// image's: the multicast switches (PassEnv), the image digest for the
// init's fingerprint, and extra. getenv reads imagectl's environment
// (os.Getenv; a Job that runs elsewhere passes none).
func ProbeEnv(getenv func(string) string, digest string, extra []string) []string {
	keys := make([]string, 0, len(PassEnv))
	for k := range PassEnv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var env []string
	for _, k := range keys {
		v := PassEnv[k]
		if hv := getenv(k); hv != "" {
			v = hv
		}
		env = append(env, k+"="+v)
	}
	if digest != "" {
		env = append(env, "IMAGECTL_IMAGE_DIGEST="+digest)
	}
	return append(env, extra...)
}

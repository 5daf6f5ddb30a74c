package spec

import (
	"imagectl/internal/initconfig"
)

// kind is the type of a spec attribute.
type kind int

const (
	kString    kind = iota // a string
	kStrings               // a list of strings
	kStringMap             // a map of strings; defaults and image merge key by key
	kBool                  // a bool
	kInt                   // a whole number
	kNumber                // a number
	kSize                  // a byte size: "1GiB", "64MB" or a number of bytes
	kDuration              // a Go duration string: "30s", "5m", "168h"
)

func (k kind) String() string {
	return [...]string{"string", "list(string)", "map(string)", "bool", "number (whole)", "number", "size", "duration"}[k]
}

// attr is one attribute of a block: its documentation, how its value is
// checked and where it lands in the Image.
type attr struct {
	name    string
	kind    kind
	doc     string
	def     string // the default, as documented ("" shows as "none")
	example string // an HCL example value
	// check validates a string (or each string of a list); it returns the
	// message of a range-positioned error.
	check func(string) error
	// noNumber makes a number an error where a version or a package is
	// meant: python = 3.10 would become "3.1".
	noNumber bool
	// min and max bound kInt values; max == 0 means no upper bound.
	min, max int64
	// typeDoc, when set, is the type shown in the reference instead of kind.
	typeDoc string
	// field is the Go field of Image the attribute sets ("Runtime.Storage.Path");
	// a test keeps it, the set func and the Image type in step.
	field string
	// set stores the converted value: string, []string, map[string]string,
	// bool, int64, float64, int64 bytes, or initconfig.Duration.
	set func(img *Image, v any)
}

// block is a nested block without labels, at most once per body.
type block struct {
	name   string
	doc    string
	attrs  []attr
	blocks []*block
	// present, when set, is called for an image whose body has the block,
	// even an empty one (an optional block that turns a feature on).
	present func(img *Image)
}

// imageOnly are the attributes an image block has and a defaults block
// does not.
var imageOnly = []attr{
	{name: "name", kind: kString, check: checkName, def: "the block label",
		example: `"pytorch-2.6-cu${replace(cuda, ".", "")}-py${python}"`,
		doc:     "The concrete image's name, unique across all loaded specs. Required with a matrix, where it must use the matrix keys so that every combination gets its own name."},
	{name: "matrix", kind: kStringMap, typeDoc: "object of lists", def: "none",
		example: `{ cuda = ["11.8", "12.1"], python = ["3.10", "3.11"] }`,
		doc:     "An object of lists: one concrete image per combination. Each key is a variable in the block's expressions (`cuda`, `python`). Values are strings, numbers or bools."},
	{name: "inherits", kind: kStrings, def: "[]",
		example: `["pytorch-base"]`,
		doc:     "Labels of image blocks in the same file whose attributes (not name, matrix or inherits) this image starts from; later parents win, the image's own attributes win over all, the defaults block lies beneath them. The parents are images in their own right."},
}

// imageBlock is the schema of an image (and, without imageOnly, defaults) body.
var imageBlock = &block{
	name: "image",
	doc:  "One image, or with `matrix` one image per combination. Attributes not set fall back to the file's `defaults` block.",
	attrs: []attr{
		{name: "base", kind: kString, check: checkBaseRef, def: "required",
			example: `"nvidia/cuda:12.1.1-runtime-ubuntu22.04"`,
			doc:     "The base image reference, with a tag or a digest.",
			field:   "Base", set: func(i *Image, v any) { i.Base = v.(string) }},
		{name: "cuda", kind: kString, noNumber: true, check: checkVersion(2), def: "none (CPU-only)",
			example: `"12.1"`,
			doc:     "The base image's CUDA toolkit version, major.minor.",
			field:   "CUDA", set: func(i *Image, v any) { i.CUDA = v.(string) }},
		{name: "torch", kind: kString, noNumber: true, check: checkVersion(3), def: "none (no torch)",
			example: `"2.6.0"`,
			doc:     "The torch release; it must be in the compatibility catalog (`imagectl compat`).",
			field:   "Torch", set: func(i *Image, v any) { i.Torch = v.(string) }},
		{name: "torch_variant", kind: kString, check: checkVariant, def: `"cu" + cuda without the dot, or "cpu" without cuda`,
			example: `"cu124"`,
			doc:     "The torch wheel variant, when it differs from the base's CUDA (e.g. cu124 wheels on a 12.1 base under minor-version compatibility).",
			field:   "TorchVariant", set: func(i *Image, v any) { i.TorchVariant = v.(string) }},
		{name: "torch_index", kind: kString, check: checkURL, def: "none",
			example: `var.torch_index`,
			doc:     "Base URL of the PyTorch wheel index; the lock stage appends the variant's path from the catalog (`whl/cu124`).",
			field:   "TorchIndex", set: func(i *Image, v any) { i.TorchIndex = v.(string) }},
		{name: "platforms", kind: kStrings, check: checkPlatform, def: `["linux/amd64"]`,
			example: `["linux/amd64", "linux/arm64"]`,
			doc:     "The OCI platforms the image is for: `linux/amd64`, `linux/arm64`. Lint checks that the torch variant publishes wheels for each (`imagectl compat` lists them; torch 2.6.0 has linux/arm64 CUDA wheels for cu126 only). The lock resolves each platform inside that platform's manifest of the base, arm64 under emulation on an amd64 builder, into one lock file (docs/lock.md, \"Platforms\"); the build makes one image per platform from it, assembled into an OCI image index (docs/build.md, \"Platforms\": emulation, native arm64 builders).",
			field:   "Platforms", set: func(i *Image, v any) { i.Platforms = v.([]string) }},
		{name: "python", kind: kString, noNumber: true, check: checkPython, def: "required",
			example: `"3.11"`,
			doc:     "The Python minor version.",
			field:   "Python", set: func(i *Image, v any) { i.Python = v.(string) }},
		{name: "nccl", kind: kString, noNumber: true, check: checkVersion(0), def: "the torch wheel's pin",
			example: `"2.21.5"`,
			doc:     "The NCCL version; it must equal what the torch wheel pins.",
			field:   "NCCL", set: func(i *Image, v any) { i.NCCL = v.(string) }},
		{name: "cudnn", kind: kString, noNumber: true, check: checkVersion(0), def: "the torch wheel's pin",
			example: `"9.1.0.70"`,
			doc:     "The cuDNN version; it must equal what the torch wheel pins.",
			field:   "CUDNN", set: func(i *Image, v any) { i.CUDNN = v.(string) }},
		{name: "driver_floor", kind: kString, noNumber: true, check: checkVersion(0), def: "required with cuda",
			example: `"525.60.13"`,
			doc:     "The lowest NVIDIA driver the image supports; it must be at least what the CUDA version (or the wheel's newer CUDA) needs.",
			field:   "DriverFloor", set: func(i *Image, v any) { i.DriverFloor = v.(string) }},
		{name: "apt", kind: kStrings, noNumber: true, check: checkApt, def: "[]",
			example: `["jq", "openssh-server"]`,
			doc:     `Debian/Ubuntu packages, "name", "name:arch" or "name=version".`,
			field:   "Apt", set: func(i *Image, v any) { i.Apt = v.([]string) }},
		{name: "pip", kind: kStrings, noNumber: true, check: checkRequirement, def: "[]",
			example: `["numpy==1.26.4", "transformers"]`,
			doc:     "pip requirements (PEP 508: \"numpy\", \"numpy==1.26.4\", \"numpy>=1.26,<2\"). torch and the NCCL and cuDNN wheels it pins come from torch, nccl and cudnn: restating one here with another version is an error.",
			field:   "Pip", set: func(i *Image, v any) { i.Pip = v.([]string) }},
		{name: "pip_indexes", kind: kStrings, check: checkURL, def: "[]",
			example: `[var.wheel_index]`,
			doc:     "Index URLs for pip, in order.",
			field:   "PipIndexes", set: func(i *Image, v any) { i.PipIndexes = v.([]string) }},
		{name: "frozen", kind: kStrings, check: checkNonEmpty, def: "[]",
			example: `["numpy"]`,
			doc:     "Package names the monthly refresh must not move, beyond the always-frozen torch, CUDA and Python minor.",
			field:   "Frozen", set: func(i *Image, v any) { i.Frozen = v.([]string) }},
		{name: "env", kind: kStringMap, def: "{}",
			example: `{ PYTHONUNBUFFERED = "1" }`,
			doc:     "Environment variables of the image; merged key by key with the defaults.",
			field:   "Env", set: func(i *Image, v any) { i.Env = v.(map[string]string) }},
		{name: "labels", kind: kStringMap, def: "{}",
			example: `{ "org.opencontainers.image.title" = "pytorch" }`,
			doc:     "Image labels; merged key by key with the defaults.",
			field:   "Labels", set: func(i *Image, v any) { i.Labels = v.(map[string]string) }},
	},
	blocks: []*block{reposBlock, runtimeBlock, verifyBlock, policyBlock},
}

var reposBlock = &block{
	name: "repos",
	doc:  "Target repositories.",
	attrs: []attr{
		{name: "staging", kind: kString, check: checkRepo, def: "required",
			example: `"${var.registry}/imagectl/staging/demo"`,
			doc:     "Receives every build, by digest.",
			field:   "Repos.Staging", set: func(i *Image, v any) { i.Repos.Staging = v.(string) }},
		{name: "release", kind: kString, check: checkRepo, def: "required",
			example: `"${var.registry}/imagectl/demo"`,
			doc:     "Receives promoted digests and their release tags.",
			field:   "Repos.Release", set: func(i *Image, v any) { i.Repos.Release = v.(string) }},
		{name: "mirror", kind: kString, check: checkRepo, def: "none: the base is pulled from where `base` names it",
			example: `"${var.registry}/platform/mirror"`,
			doc:     "Repository prefix in the platform's own registry that holds copies of the upstream bases: `imagectl mirror` copies `base` (by digest, every platform of its index) to the mirror plus the base's repository path (`nvidia/cuda:12.1.1-runtime-ubuntu22.04` to `<mirror>/nvidia/cuda`); lock resolves the base there and builds pull it from there, so a pinned lock still builds after the upstream deleted the tag.",
			field:   "Repos.Mirror", set: func(i *Image, v any) { i.Repos.Mirror = v.(string) }},
	},
}

var runtimeBlock = &block{
	name: "runtime",
	doc:  "The init's configuration (imagectl-init, PID 1), baked into the image; maps onto initconfig.Config (internal/initconfig), the contract between the build and the init.",
	attrs: []attr{
		{name: "swappiness", kind: kInt, min: 0, max: 200, def: "unchanged",
			example: `1`,
			doc:     "Written to /proc/sys/vm/swappiness at start.",
			field:   "Runtime.Swappiness", set: func(i *Image, v any) { n := int(v.(int64)); i.Runtime.Swappiness = &n }},
		{name: "min_shm", kind: kSize, def: "no check",
			example: `"1GiB"`,
			doc:     "The smallest /dev/shm the workload needs.",
			field:   "Runtime.MinShmBytes", set: func(i *Image, v any) { i.Runtime.MinShmBytes = v.(int64) }},
		{name: "shm_path", kind: kString, check: checkAbsPath, def: `"/dev/shm"`,
			example: `"/dev/shm"`,
			doc:     "The shared-memory mount the init measures against min_shm and enlarges.",
			field:   "Runtime.ShmPath", set: func(i *Image, v any) { i.Runtime.ShmPath = v.(string) }},
		{name: "tmpdir", kind: kString, check: checkAbsPath, def: "TMPDIR unchanged",
			example: `"/storage/tmp"`,
			doc:     "Exported as TMPDIR (created 0775).",
			field:   "Runtime.TmpDir", set: func(i *Image, v any) { i.Runtime.TmpDir = v.(string) }},
		{name: "driver_policy", kind: kString, check: checkOneOf("fail", "warn"), def: `"warn"`,
			example: `"fail"`,
			doc:     `What the init does when the driver is below driver_floor: "fail" or "warn".`,
			field:   "Runtime.DriverPolicy", set: func(i *Image, v any) { i.Runtime.DriverPolicy = v.(string) }},
		{name: "fingerprint_path", kind: kString, check: checkAbsPath, def: "no fingerprint",
			example: `"/storage/.imagectl/fingerprint.json"`,
			doc:     "Where the environment fingerprint is written.",
			field:   "Runtime.FingerprintPath", set: func(i *Image, v any) { i.Runtime.FingerprintPath = v.(string) }},
		{name: "grace_period", kind: kDuration, def: "never",
			example: `"30s"`,
			doc:     "When set, the init SIGKILLs the command's process group this long after forwarding SIGTERM or SIGINT; unset, it waits as long as the command lives.",
			field:   "Runtime.GracePeriod", set: func(i *Image, v any) { i.Runtime.GracePeriod = v.(initconfig.Duration) }},
		{name: "quiet", kind: kBool, def: "false",
			example: `true`,
			doc:     "Suppresses the init's one-line summary on the happy path.",
			field:   "Runtime.Quiet", set: func(i *Image, v any) { i.Runtime.Quiet = v.(bool) }},
	},
	blocks: []*block{storageBlock, cachesBlock, userBlock, sshBlock, jupyterBlock},
}

// rtUser, rtSSH and rtJupyter return the optional runtime blocks, made on
// first use.
func rtUser(i *Image) *initconfig.User {
	if i.Runtime.User == nil {
		i.Runtime.User = &initconfig.User{}
	}
	return i.Runtime.User
}

func rtSSH(i *Image) *initconfig.SSH {
	if i.Runtime.SSH == nil {
		i.Runtime.SSH = &initconfig.SSH{}
	}
	return i.Runtime.SSH
}

func rtJupyter(i *Image) *initconfig.Jupyter {
	if i.Runtime.Jupyter == nil {
		i.Runtime.Jupyter = &initconfig.Jupyter{}
	}
	return i.Runtime.Jupyter
}

var userBlock = &block{
	name:    "user",
	doc:     "The user the command and Jupyter run as. The init does root's work first (sysctls, /dev/shm, sshd host keys, the home, TMPDIR and cache folders given to the user), then switches (setgroups, setgid, setuid; HOME, USER, LOGNAME). The build adds the user and group to the image when the base lacks them. A container started as a non-root user skips root's steps with one warning (docs/init.md, \"A non-root user\").",
	present: func(i *Image) { rtUser(i) },
	attrs: []attr{
		{name: "name", kind: kString, check: checkUserName, def: "required",
			example: `"jovyan"`,
			doc:     "The login name: USER, LOGNAME, the only user sshd admits.",
			field:   "Runtime.User.Name", set: func(i *Image, v any) { rtUser(i).Name = v.(string) }},
		{name: "uid", kind: kInt, min: 1, max: 1<<31 - 2, def: "required",
			example: `1000`,
			doc:     "The numeric user id.",
			field:   "Runtime.User.UID", set: func(i *Image, v any) { rtUser(i).UID = int(v.(int64)) }},
		{name: "gid", kind: kInt, min: 0, max: 1<<31 - 2, def: "the uid",
			example: `1000`,
			doc:     "The numeric primary group id.",
			field:   "Runtime.User.GID", set: func(i *Image, v any) { rtUser(i).GID = int(v.(int64)) }},
		{name: "home", kind: kString, check: checkAbsPath, def: `"/home/<name>"`,
			example: `"/home/jovyan"`,
			doc:     "HOME; created (and given to the user) at start when missing or root's, e.g. an empty volume.",
			field:   "Runtime.User.Home", set: func(i *Image, v any) { rtUser(i).Home = v.(string) }},
	},
}

var sshBlock = &block{
	name:    "ssh",
	doc:     "sshd (openssh-server in `apt`), run and supervised by the init, keys only: password, keyboard-interactive and root logins are off whatever the image's sshd_config says. Needs a user block. `ssh {}` turns it on with the defaults.",
	present: func(i *Image) { rtSSH(i) },
	attrs: []attr{
		{name: "port", kind: kInt, min: 1, max: 65535, def: "22",
			example: `22`,
			doc:     "The port sshd listens on.",
			field:   "Runtime.SSH.Port", set: func(i *Image, v any) { rtSSH(i).Port = int(v.(int64)) }},
		{name: "authorized_keys_file", kind: kString, check: checkAbsPath, def: "none",
			example: `"/etc/imagectl/ssh/authorized_keys"`,
			doc:     "A file of public keys for the user, mounted at run time (a Kubernetes secret); never part of the image.",
			field:   "Runtime.SSH.AuthorizedKeysFile", set: func(i *Image, v any) { rtSSH(i).AuthorizedKeysFile = v.(string) }},
		{name: "authorized_keys_env", kind: kString, check: checkEnvName, def: "none",
			example: `"SSH_AUTHORIZED_KEYS"`,
			doc:     "An environment variable with public keys, one a line; used with the file's.",
			field:   "Runtime.SSH.AuthorizedKeysEnv", set: func(i *Image, v any) { rtSSH(i).AuthorizedKeysEnv = v.(string) }},
	},
}

var jupyterBlock = &block{
	name:    "jupyter",
	doc:     "A Jupyter server run and supervised by the init as the user, bound to 0.0.0.0 under the base URL a platform's proxy routes (Kubeflow's NB_PREFIX). It needs a token or a hashed password at start, from the environment or a mounted file, and is refused without one; neither is ever on its command line nor in the image. Needs a user block. `jupyter {}` turns it on with the defaults.",
	present: func(i *Image) { rtJupyter(i) },
	attrs: []attr{
		{name: "command", kind: kStrings, check: checkNonEmpty, def: `["jupyter", "lab"]`,
			example: `["jupyter", "notebook"]`,
			doc:     "The server's command; the init adds nothing to it (its settings go in a config file on JUPYTER_CONFIG_PATH).",
			field:   "Runtime.Jupyter.Command", set: func(i *Image, v any) { rtJupyter(i).Command = v.([]string) }},
		{name: "port", kind: kInt, min: 1, max: 65535, def: "8888",
			example: `8888`,
			doc:     "The port when the port_env variable is unset.",
			field:   "Runtime.Jupyter.Port", set: func(i *Image, v any) { rtJupyter(i).Port = int(v.(int64)) }},
		{name: "port_env", kind: kString, check: checkEnvName, def: `"NB_PORT"`,
			example: `"NB_PORT"`,
			doc:     "The variable a platform sets the port in.",
			field:   "Runtime.Jupyter.PortEnv", set: func(i *Image, v any) { rtJupyter(i).PortEnv = v.(string) }},
		{name: "base_url_env", kind: kString, check: checkEnvName, def: `"NB_PREFIX"`,
			example: `"NB_PREFIX"`,
			doc:     "The variable holding the URL prefix the server answers under (\"/\" when unset).",
			field:   "Runtime.Jupyter.BaseURLEnv", set: func(i *Image, v any) { rtJupyter(i).BaseURLEnv = v.(string) }},
		{name: "token_env", kind: kString, check: checkEnvName, def: `"JUPYTER_TOKEN"`,
			example: `"JUPYTER_TOKEN"`,
			doc:     "The variable holding the access token.",
			field:   "Runtime.Jupyter.TokenEnv", set: func(i *Image, v any) { rtJupyter(i).TokenEnv = v.(string) }},
		{name: "token_file", kind: kString, check: checkAbsPath, def: "none",
			example: `"/etc/imagectl/jupyter/token"`,
			doc:     "A mounted file holding the token, read when the variable is unset.",
			field:   "Runtime.Jupyter.TokenFile", set: func(i *Image, v any) { rtJupyter(i).TokenFile = v.(string) }},
		{name: "password_env", kind: kString, check: checkEnvName, def: "none",
			example: `"JUPYTER_PASSWORD_HASH"`,
			doc:     "The variable holding a hashed password (the output of jupyter's passwd()).",
			field:   "Runtime.Jupyter.PasswordEnv", set: func(i *Image, v any) { rtJupyter(i).PasswordEnv = v.(string) }},
		{name: "password_file", kind: kString, check: checkAbsPath, def: "none",
			example: `"/etc/imagectl/jupyter/password"`,
			doc:     "A mounted file holding the hashed password, read when the variable is unset.",
			field:   "Runtime.Jupyter.PasswordFile", set: func(i *Image, v any) { rtJupyter(i).PasswordFile = v.(string) }},
		{name: "allow_origin", kind: kString, check: checkNonEmpty, def: `"*"`,
			example: `"*"`,
			doc:     "The server's allow_origin: the Access-Control-Allow-Origin header Kubeflow's iframes need.",
			field:   "Runtime.Jupyter.AllowOrigin", set: func(i *Image, v any) { rtJupyter(i).AllowOrigin = v.(string) }},
	},
}

var storageBlock = &block{
	name: "storage",
	doc:  "The persistent storage the init waits for.",
	attrs: []attr{
		{name: "path", kind: kString, check: checkAbsPath, def: "none",
			example: `"/storage"`,
			doc:     "Mount point of the persistent storage.",
			field:   "Runtime.Storage.Path", set: func(i *Image, v any) { i.Runtime.Storage.Path = v.(string) }},
		{name: "ready_file", kind: kString, check: checkAbsPath, def: "none",
			example: `"/storage/.ready"`,
			doc:     "A file whose existence means the storage is ready.",
			field:   "Runtime.Storage.ReadyFile", set: func(i *Image, v any) { i.Runtime.Storage.ReadyFile = v.(string) }},
		{name: "timeout", kind: kDuration, def: `"60s"`,
			example: `"30s"`,
			doc:     "How long to wait for the storage.",
			field:   "Runtime.Storage.Timeout", set: func(i *Image, v any) { i.Runtime.Storage.Timeout = v.(initconfig.Duration) }},
		{name: "required", kind: kBool, def: "false",
			example: `true`,
			doc:     "Makes a timeout fatal (exit 75); otherwise the init warns and falls back to local paths.",
			field:   "Runtime.Storage.Required", set: func(i *Image, v any) { i.Runtime.Storage.Required = v.(bool) }},
	},
}

var cachesBlock = &block{
	name: "caches",
	doc:  "Compile and model cache directories, usually on storage.",
	attrs: []attr{
		{name: "inductor", kind: kString, check: checkAbsPath, def: "unset", example: `"/storage/cache/inductor"`,
			doc: "TORCHINDUCTOR_CACHE_DIR.", field: "Runtime.Caches.Inductor", set: func(i *Image, v any) { i.Runtime.Caches.Inductor = v.(string) }},
		{name: "triton", kind: kString, check: checkAbsPath, def: "unset", example: `"/storage/cache/triton"`,
			doc: "TRITON_CACHE_DIR.", field: "Runtime.Caches.Triton", set: func(i *Image, v any) { i.Runtime.Caches.Triton = v.(string) }},
		{name: "tensorrt", kind: kString, check: checkAbsPath, def: "unset", example: `"/storage/cache/tensorrt"`,
			doc: "The TensorRT engine and timing cache.", field: "Runtime.Caches.TensorRT", set: func(i *Image, v any) { i.Runtime.Caches.TensorRT = v.(string) }},
		{name: "hf", kind: kString, check: checkAbsPath, def: "unset", example: `"/storage/cache/huggingface"`,
			doc: "HF_HOME.", field: "Runtime.Caches.HF", set: func(i *Image, v any) { i.Runtime.Caches.HF = v.(string) }},
		{name: "cuda", kind: kString, check: checkAbsPath, def: "unset", example: `"/storage/cache/cuda"`,
			doc: "CUDA_CACHE_PATH (the CUDA JIT cache).", field: "Runtime.Caches.CUDA", set: func(i *Image, v any) { i.Runtime.Caches.CUDA = v.(string) }},
		{name: "gc_max_age", kind: kDuration, def: "keep", example: `"168h"`,
			doc: "Removes cache entries not modified for longer than this.", field: "Runtime.Caches.GCMaxAge", set: func(i *Image, v any) { i.Runtime.Caches.GCMaxAge = v.(initconfig.Duration) }},
		{name: "gc_max_size", kind: kSize, def: "unlimited", example: `"50GiB"`,
			doc: "Trims the compile caches, oldest first, to this total.", field: "Runtime.Caches.GCMaxBytes", set: func(i *Image, v any) { i.Runtime.Caches.GCMaxBytes = v.(int64) }},
	},
}

var verifyBlock = &block{
	name: "verify",
	doc:  "Thresholds of the verify stage; maps onto spec.Verify.",
	attrs: []attr{
		{name: "cpu_only", kind: kBool, def: "false", example: `true`,
			doc: "The image needs no GPU: GPU checks are skipped, not failed.", field: "Verify.CPUOnly", set: func(i *Image, v any) { i.Verify.CPUOnly = v.(bool) }},
		{name: "min_gpus", kind: kInt, min: 0, max: 1 << 16, def: "1", example: `2`,
			doc: "The smallest GPU count verification accepts.", field: "Verify.MinGPUs", set: func(i *Image, v any) { i.Verify.MinGPUs = int(v.(int64)) }},
		{name: "min_busbw_gbps", kind: kNumber, def: "no floor", example: `200`,
			doc: "All-reduce bus bandwidth floor in GB/s. One GPU has no bus bandwidth (the check skips): with `min_gpus` below 2 the floor is not enforced, and lint warns.", field: "Verify.MinBusBandwidthGBps", set: func(i *Image, v any) { i.Verify.MinBusBandwidthGBps = v.(float64) }},
		{name: "allreduce_size", kind: kSize, def: `"256MiB"`, example: `"1GiB"`,
			doc: "All-reduce message size.", field: "Verify.AllReduceBytes", set: func(i *Image, v any) { i.Verify.AllReduceBytes = v.(int64) }},
		{name: "compile_cache", kind: kBool, def: "false", example: `true`,
			doc: "Turns the torch.compile cache-reuse check on.", field: "Verify.CompileCache", set: func(i *Image, v any) { i.Verify.CompileCache = v.(bool) }},
		{name: "timeout", kind: kDuration, def: `"10m"`, example: `"15m"`,
			doc: "Bounds the whole verification.", field: "Verify.Timeout", set: func(i *Image, v any) { i.Verify.Timeout = v.(initconfig.Duration) }},
	},
}

var policyBlock = &block{
	name: "policy",
	doc:  "Image policy rules checked at lock and build time; maps onto spec.Policy.",
	attrs: []attr{
		{name: "ssh_key_only", kind: kBool, def: "false", example: `true`,
			doc: "An installed sshd must disable password logins: the build writes an sshd_config.d drop-in (no password or keyboard-interactive login, root by key only) and fails when `sshd -T` in the image still allows a password (docs/build.md).", field: "Policy.SSHKeyOnly", set: func(i *Image, v any) { i.Policy.SSHKeyOnly = v.(bool) }},
		{name: "forbidden_packages", kind: kStrings, check: checkNonEmpty, def: "[]", example: `["telnet", "rsh-server"]`,
			doc: "Packages that must not be in the resolved apt or pip closure: the lock fails naming the package and the dependency chain that pulled it in.", field: "Policy.ForbiddenPackages", set: func(i *Image, v any) { i.Policy.ForbiddenPackages = v.([]string) }},
		{name: "support_months", kind: kInt, min: 1, max: 120, def: "no window", example: `12`,
			doc: "How long a release is patched, counting its release month (AWS DLC's rule is 12): promotion records the end date in the release file and in a signed support attestation users read from the registry; `pin` warns in the last month and refuses an expired release (exit 5, `--accept-expired` lets it through); `scan releases` reports expired releases instead of re-attesting them (docs/users.md). Read at promotion, not locked.", field: "Policy.SupportMonths", set: func(i *Image, v any) { i.Policy.SupportMonths = int(v.(int64)) }},
	},
	blocks: []*block{vulnerabilitiesBlock},
}

var vulnerabilitiesBlock = &block{
	name: "vulnerabilities",
	doc:  "The promotion gate on the image's latest signed vulnerability scan (docs/security.md); maps onto spec.VulnerabilityPolicy. Read at promotion, not locked: editing it never stales a lock.",
	attrs: []attr{
		{name: "max_severity", kind: kString, check: checkOneOf("critical", "high", "medium", "low", "negligible"), def: `"high"`, example: `"high"`,
			doc: "A finding of this severity or above refuses promotion (exit 5, naming the CVE, the package and the fix version).", field: "Policy.Vulnerabilities.MaxSeverity", set: func(i *Image, v any) { i.Policy.vulns().MaxSeverity = v.(string) }},
		{name: "fixable_only", kind: kBool, def: "false", example: `true`,
			doc: "Only findings with a known fixed version refuse.", field: "Policy.Vulnerabilities.FixableOnly", set: func(i *Image, v any) { i.Policy.vulns().FixableOnly = v.(bool) }},
		{name: "allow", kind: kStrings, check: checkNonEmpty, def: "[]", example: `["CVE-2016-2781"]`,
			doc: "Vulnerability IDs (CVE or GHSA, aliases match) that do not refuse. An entry that matches no finding any more, or whose finding has become fixable, is outdated and refuses.", field: "Policy.Vulnerabilities.Allow", set: func(i *Image, v any) { i.Policy.vulns().Allow = v.([]string) }},
		{name: "max_db_age", kind: kDuration, def: `"120h"`, example: `"48h"`,
			doc: "The oldest vulnerability database (its build date, at scan time) a scan may have used.", field: "Policy.Vulnerabilities.MaxDBAge", set: func(i *Image, v any) { i.Policy.vulns().MaxDBAge = v.(initconfig.Duration) }},
	},
}

// variableAttrs are the attributes of a variable block.
var variableAttrs = []attr{
	{name: "type", kind: kString, typeDoc: "type expression", def: "any", example: `string`, doc: "A type constraint: string, number, bool, list(string), map(string), ..."},
	{name: "default", kind: kString, typeDoc: "any (converted to type)", def: "none (the variable must be set)", example: `"127.0.0.1:5000"`, doc: "The value when neither --var nor IMAGECTL_VAR_<name> sets one."},
	{name: "description", kind: kString, def: `""`, example: `"registry host:port"`, doc: "What the variable is for."},
}

package podman

import "fmt"

// GPUDeviceKind is the CDI kind of NVIDIA GPUs (nvidia-ctk cdi generate).
const GPUDeviceKind = "nvidia.com/gpu"

// Option configures the podman runtime (New).
type Option func(*options) error

type options struct {
	binary      string
	python      string
	gpuMode     string
	gpus        int
	shmSize     string
	storage     string
	storagePath string
	ulimits     []string
	extraArgs   []string
}

func makeOptions(opts ...Option) (*options, error) {
	o := &options{binary: "podman", gpuMode: "cdi"}
	for _, opt := range opts {
		if err := opt(o); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// WithBinary sets the container CLI: podman or docker (a name on PATH or a
// path). The default is "podman".
func WithBinary(bin string) Option {
	return func(o *options) error {
		if bin == "" {
			return fmt.Errorf("podman runtime: empty binary")
		}
		o.binary = bin
		return nil
	}
}

// WithPython sets the interpreter inside the image. The default is the
// probe's (the lock's: verify.ImagePython), else python3.
func WithPython(py string) Option {
	return func(o *options) error {
		o.python = py
		return nil
	}
}

// WithGPUMode sets how a GPU probe gets the host's GPUs: "cdi" passes CDI
// devices (--device nvidia.com/gpu=all, or one --device per GPU of
// WithGPUs), "docker" passes --gpus all (or --gpus N). The default is cdi.
func WithGPUMode(mode string) Option {
	return func(o *options) error {
		switch mode {
		case "", "cdi":
			o.gpuMode = "cdi"
		case "docker":
			o.gpuMode = mode
		default:
			return fmt.Errorf("gpu mode %q: want cdi or docker", mode)
		}
		return nil
	}
}

// WithGPUs sets how many GPUs a GPU probe's container gets: the first n.
// The default, 0, is all.
func WithGPUs(n int) Option {
	return func(o *options) error {
		if n < 0 {
			return fmt.Errorf("podman runtime: negative GPU count %d", n)
		}
		o.gpus = n
		return nil
	}
}

// gpuFlags are the flags that give a GPU probe its GPUs; nil is the CDI
// default, --device nvidia.com/gpu=all.
func (o *options) gpuFlags() []string {
	if o.gpuMode == "docker" {
		if o.gpus > 0 {
			return []string{"--gpus", fmt.Sprint(o.gpus)}
		}
		return []string{"--gpus", "all"}
	}
	var flags []string
	for i := 0; i < o.gpus; i++ {
		flags = append(flags, "--device", fmt.Sprintf("%s=%d", GPUDeviceKind, i))
	}
	return flags
}

// WithShmSize sets --shm-size. The default is "1g".
func WithShmSize(size string) Option {
	return func(o *options) error {
		o.shmSize = size
		return nil
	}
}

// WithStorage mounts the host folder dir at path inside the container (the
// lock's runtime.storage.path). The default mounts nothing.
func WithStorage(dir, path string) Option {
	return func(o *options) error {
		o.storage, o.storagePath = dir, path
		return nil
	}
}

// WithUlimits sets the --ulimit flags. The default, nofile=1024:1024 and
// nproc=1024:1024, is what rootful podman needs on a machine without
// CAP_SYS_RESOURCE (its default rlimits are refused there); an empty list
// passes none.
func WithUlimits(u ...string) Option {
	return func(o *options) error {
		o.ulimits = append([]string{}, u...)
		return nil
	}
}

// WithExtraArgs adds arguments for `run`, before the image, after every
// other flag. The default is none.
func WithExtraArgs(args ...string) Option {
	return func(o *options) error {
		o.extraArgs = append(o.extraArgs, args...)
		return nil
	}
}

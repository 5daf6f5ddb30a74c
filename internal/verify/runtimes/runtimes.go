// Package runtimes selects the runtime a verification runs its probes
// with, the one way both imagectl verify and imagectl release do: "auto"
// through Detect, a named kind checked, and then, per image by digest, the
// runtime built from that kind's package (inplace, podman, containerd,
// kubernetes) with the common settings and the caller's options for that
// kind. A container runtime given no storage folder gets a throwaway ready
// one (verify.ReadyStorage), removed when the runtime is closed.
package runtimes

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"k8s.io/apimachinery/pkg/api/resource"

	"imagectl/internal/exitcode"
	"imagectl/internal/lock"
	"imagectl/internal/verify"
	"imagectl/internal/verify/containerd"
	"imagectl/internal/verify/inplace"
	"imagectl/internal/verify/kubernetes"
	"imagectl/internal/verify/podman"
)

// Kinds are the runtime kinds Select takes, "auto" first.
var Kinds = []string{verify.RuntimeAuto, verify.RuntimeInPlace, verify.RuntimeContainerd, verify.RuntimePodman, verify.RuntimeDocker, verify.RuntimeKubernetes}

// Selection is the runtime kind Select chose and why; Runtime builds it for
// each image.
type Selection struct {
	// Kind is the runtime's name: in-place, containerd, podman, docker or
	// kubernetes.
	Kind string
	// Reason says what auto detected; "" when the caller named the kind.
	Reason string
	o      options
}

// Select resolves kind ("" or "auto" through Detect; the others as named)
// and checks the options given for it. A kind that does not exist, or an
// option it cannot take, is a usage error (exit 2); auto that finds nothing
// is a *verify.NotRunError (exit 7). The caller prints Kind and Reason: the
// choice is never silent. There is no fallback: in-place runs under auto
// only WithAutoInPlace, inside the image itself.
func Select(ctx context.Context, kind string, opts ...Option) (*Selection, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, exitcode.Wrap(exitcode.Usage, err)
	}
	s := &Selection{Kind: kind, o: *o}
	if kind == "" || kind == verify.RuntimeAuto {
		var img name.Digest
		if o.autoInPlace != nil {
			img = *o.autoInPlace
		}
		k, reason, err := o.detector.Detect(ctx, o.containerdAddress, img, o.autoInPlace != nil)
		if err != nil {
			return nil, &verify.NotRunError{Stage: "runtime", Err: err}
		}
		s.Kind, s.Reason = k, reason
	}
	if err := s.check(); err != nil {
		return nil, exitcode.Wrap(exitcode.Usage, err)
	}
	return s, nil
}

// check fails on what would fail for every image: a kind that does not
// exist, --from for a runtime that runs the digest, a bad size or option.
func (s *Selection) check() error {
	switch s.Kind {
	case verify.RuntimeInPlace, verify.RuntimePodman, verify.RuntimeDocker:
	case verify.RuntimeContainerd, verify.RuntimeKubernetes:
		if s.o.from != "" {
			return fmt.Errorf("the %s runtime runs the image by digest; --from %q is for podman and docker", s.Kind, s.o.from)
		}
	default:
		return fmt.Errorf("runtime %q: want %s", s.Kind, strings.Join(Kinds, ", "))
	}
	if s.o.shmSize != "" {
		if _, err := ParseShmSize(s.o.shmSize); err != nil {
			return err
		}
	}
	// The options alone, without an image: the constructors check them.
	switch s.Kind {
	case verify.RuntimeContainerd:
		_, err := containerd.New(placeholder, s.containerdOptions(nil, 0, "")...)
		return err
	case verify.RuntimePodman, verify.RuntimeDocker:
		_, err := podman.New(placeholder.String(), s.podmanOptions(nil, 0, "")...)
		return err
	case verify.RuntimeKubernetes:
		_, err := kubernetes.New(&lock.Lock{}, placeholder, s.kubernetesOptions()...)
		return err
	}
	return nil
}

// placeholder is the image check builds runtimes for; they run nothing.
var placeholder = name.MustParseReference("localhost/imagectl/check@sha256:0000000000000000000000000000000000000000000000000000000000000000").(name.Digest)

// Runtime builds the selected runtime for image ref, by digest, of lock l
// (its storage path and /dev/shm size). The caller (verify.Run) closes it.
func (s *Selection) Runtime(l *lock.Lock, ref name.Digest) (verify.Runtime, error) {
	shm := verify.ShmBytes(l)
	if s.o.shmSize != "" {
		n, err := ParseShmSize(s.o.shmSize)
		if err != nil {
			return nil, err
		}
		shm = n
	}
	switch s.Kind {
	case verify.RuntimeInPlace:
		return inplace.New(inplace.WithPython(s.o.python))
	case verify.RuntimeKubernetes:
		// A Job mounts its storage claim (or an emptyDir), never a folder here.
		return kubernetes.New(l, ref, s.kubernetesOptions()...)
	}
	dir, st, err := s.storage(l)
	if err != nil {
		return nil, err
	}
	var rt verify.Runtime
	if s.Kind == verify.RuntimeContainerd {
		rt, err = containerd.New(ref, s.containerdOptions(l, shm, dir)...)
	} else {
		rt, err = podman.New(cmp.Or(s.o.from, ref.String()), s.podmanOptions(l, shm, dir)...)
	}
	if err != nil {
		if st != nil {
			_ = os.RemoveAll(st.Dir)
		}
		return nil, err
	}
	if st != nil {
		return st.Wrap(rt), nil
	}
	return rt, nil
}

// storage is the folder a container runtime mounts at the lock's storage
// path: WithStorage's, else a throwaway ready one (st, removed on Close);
// none when the lock has no storage path.
func (s *Selection) storage(l *lock.Lock) (dir string, st *verify.Storage, err error) {
	if s.o.storage != "" || l.Runtime.Storage.Path == "" {
		return s.o.storage, nil, nil
	}
	st, err = verify.ReadyStorage(l)
	if err != nil {
		return "", nil, err
	}
	return st.Dir, st, nil
}

func storagePath(l *lock.Lock) string {
	if l == nil {
		return ""
	}
	return l.Runtime.Storage.Path
}

func (s *Selection) containerdOptions(l *lock.Lock, shm int64, dir string) []containerd.Option {
	opts := []containerd.Option{containerd.WithAddress(s.o.containerdAddress), containerd.WithPython(s.o.python),
		containerd.WithGPUs(s.o.gpus), containerd.WithShmBytes(shm), containerd.WithStorage(dir, storagePath(l))}
	return append(opts, s.o.containerd...)
}

func (s *Selection) podmanOptions(l *lock.Lock, shm int64, dir string) []podman.Option {
	opts := []podman.Option{podman.WithBinary(s.Kind), podman.WithPython(s.o.python), podman.WithGPUs(s.o.gpus),
		podman.WithStorage(dir, storagePath(l))}
	if shm > 0 {
		opts = append(opts, podman.WithShmSize(fmt.Sprint(shm)))
	}
	return append(opts, s.o.podman...)
}

func (s *Selection) kubernetesOptions() []kubernetes.Option {
	var opts []kubernetes.Option
	if s.o.python != "" {
		opts = append(opts, kubernetes.WithPython(s.o.python))
	}
	if s.o.shmSize != "" {
		opts = append(opts, kubernetes.WithShmSize(s.o.shmSize))
	}
	return append(opts, s.o.kubernetes...)
}

// ParseShmSize reads a /dev/shm size: a Kubernetes quantity (1Gi, 512Mi,
// 2G) or a podman-style size (1g, 512m, 64k), or a bare number of bytes.
func ParseShmSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if n := len(t); n > 0 {
		// podman's suffixes are binary; a Kubernetes "m" would be milli.
		if bin, ok := map[byte]string{'k': "Ki", 'm': "Mi", 'g': "Gi"}[t[n-1]]; ok {
			t = t[:n-1] + bin
		} else if t[n-1] == 'b' {
			t = t[:n-1]
		}
	}
	q, err := resource.ParseQuantity(t)
	if err != nil || q.Value() <= 0 {
		return 0, fmt.Errorf("shm size %q: want a positive size such as 1Gi, 512m or a number of bytes", s)
	}
	return q.Value(), nil
}

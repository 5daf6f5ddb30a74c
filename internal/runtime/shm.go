package runtime

import (
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"
)

// DefaultShmPath is the shared-memory mount the init checks.
const DefaultShmPath = "/dev/shm"

// dockerDefaultShm is the /dev/shm size Docker, podman and containerd give a
// container unless told otherwise.
const dockerDefaultShm = 64 << 20

// ShmResult says what the /dev/shm step measured and did.
type ShmResult struct {
	Path    string `json:"path"`
	Bytes   int64  `json:"bytes"`
	FSType  string `json:"fstype,omitempty"`
	Resized bool   `json:"resized,omitempty"`
	// Advice is set when the mount is below the minimum and could not be
	// enlarged.
	Advice string `json:"advice,omitempty"`
}

// MeasureShm returns the size of the filesystem at path.
func MeasureShm(path string) (ShmResult, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return ShmResult{Path: path}, fmt.Errorf("measuring %s: %w", path, err)
	}
	r := ShmResult{Path: path, Bytes: int64(st.Blocks) * st.Bsize}
	if st.Type == unix.TMPFS_MAGIC {
		r.FSType = "tmpfs"
	}
	return r, nil
}

// ensureShm enlarges the tmpfs at path to min bytes when it is smaller: a
// remount with size=, which needs CAP_SYS_ADMIN. When that is not allowed
// the result carries advice on how to start the container instead.
func ensureShm(path string, min int64) (ShmResult, error) {
	r, err := MeasureShm(path)
	if err != nil || min <= 0 || r.Bytes >= min {
		return r, err
	}
	if r.FSType == "tmpfs" {
		var st unix.Statfs_t
		if unix.Statfs(path, &st) == nil {
			flags := uintptr(unix.MS_REMOUNT) | remountFlags(st.Flags)
			if err := unix.Mount("", path, "", flags, "size="+strconv.FormatInt(min, 10)); err == nil {
				if after, err := MeasureShm(path); err == nil && after.Bytes >= min {
					after.Resized = true
					return after, nil
				}
			}
		}
	}
	r.Advice = shmAdvice(path, r.Bytes, min)
	return r, nil
}

// remountFlags carries the mount's current flags over to a remount, which
// would otherwise clear them (and fail where they are locked).
func remountFlags(f int64) uintptr {
	var out uintptr
	for st, ms := range map[int64]uintptr{
		unix.ST_RDONLY: unix.MS_RDONLY, unix.ST_NOSUID: unix.MS_NOSUID,
		unix.ST_NODEV: unix.MS_NODEV, unix.ST_NOEXEC: unix.MS_NOEXEC,
		unix.ST_NOATIME: unix.MS_NOATIME, unix.ST_NODIRATIME: unix.MS_NODIRATIME,
		unix.ST_RELATIME: unix.MS_RELATIME,
	} {
		if f&st != 0 {
			out |= ms
		}
	}
	return out
}

func shmAdvice(path string, have, min int64) string {
	what := humanSize(have)
	if have == dockerDefaultShm {
		what += " (the container runtime's default)"
	}
	size := humanSize(min)
	return fmt.Sprintf("%s is %s, below the %s this image needs, and it cannot be enlarged from inside the container: PyTorch DataLoader workers fail with \"Bus error\" and NCCL hangs or times out. Start the container with --shm-size=%s or --ipc=host (docker/podman), or on Kubernetes mount an emptyDir with medium: Memory and sizeLimit: %si at %s", path, what, size, lowerSize(size), size, path)
}

func lowerSize(s string) string {
	b := []byte(s)
	if n := len(b); n > 0 && b[n-1] >= 'A' && b[n-1] <= 'Z' {
		b[n-1] += 'a' - 'A'
	}
	return string(b)
}

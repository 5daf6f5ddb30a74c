package runtime

import (
	"errors"
	"io/fs"
	"strconv"
	"syscall"
	"time"
)

// The init reads and writes its few small files (the config, mountinfo,
// sysctls, the driver's version, the fingerprint) with plain system calls
// instead of os.File: an os.File registers every descriptor with the Go
// runtime's network poller, and the first one sets the poller up (epoll,
// an eventfd, two fcntl and two epoll_ctl per file, then a poller that the
// scheduler keeps checking), none of which a regular file needs. See
// docs/init.md ("Start-up").

// readFile returns the contents of path. Its errors are *fs.PathError, as
// os.ReadFile's are, so errors.Is(err, fs.ErrNotExist) holds for a missing
// file.
func readFile(path string) ([]byte, error) {
	fd, err := openRetry(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	b := make([]byte, 0, 4096)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := syscall.Read(fd, b[len(b):cap(b)])
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			return b, nil
		}
		b = b[:len(b)+n]
	}
}

// writeNewFile creates path (which must not exist) with mode perm, exactly
// (whatever the umask), and writes b to it.
func writeNewFile(path string, b []byte, perm uint32) error {
	return writeOpen(path, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_CLOEXEC, perm, b)
}

// writeExisting writes b to the existing file path (a sysctl), truncating it.
func writeExisting(path string, b []byte) error {
	return writeOpen(path, syscall.O_WRONLY|syscall.O_TRUNC|syscall.O_CLOEXEC, 0, b)
}

// writeOpen opens path with flags, writes b and, when flags create the
// file, sets its mode to perm.
func writeOpen(path string, flags int, perm uint32, b []byte) error {
	fd, err := openRetry(path, flags, perm)
	if err != nil {
		return &fs.PathError{Op: "open", Path: path, Err: err}
	}
	werr := writeAll(fd, b)
	if werr == nil && flags&syscall.O_CREAT != 0 {
		werr = syscall.Fchmod(fd, perm)
	}
	cerr := syscall.Close(fd)
	if werr == nil {
		werr = cerr
	}
	if werr != nil {
		return &fs.PathError{Op: "write", Path: path, Err: werr}
	}
	return nil
}

func writeAll(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := syscall.Write(fd, b)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

func openRetry(path string, flags int, perm uint32) (int, error) {
	for {
		fd, err := syscall.Open(path, flags, perm)
		if !errors.Is(err, syscall.EINTR) {
			return fd, err
		}
	}
}

// tempName is a name for a temporary file beside path, unique to this
// process and moment (the init writes one at a time).
func tempName(dir, base string) string {
	return dir + "/." + base + ".tmp-" + strconv.Itoa(syscall.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
}

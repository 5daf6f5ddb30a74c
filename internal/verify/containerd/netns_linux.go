package containerd

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"

	"imagectl/internal/owner"
)

// netNS is a network namespace holding only its loopback interface, up,
// kept alive by a bind mount of its nsfs file. Probe containers join it:
// no route leaves the container, yet 127.0.0.1 works (the all-reduce's
// ranks rendezvous there), as with podman's --network=none. A fresh
// namespace of runc's own would have loopback down.
type netNS struct {
	dir  string
	path string
}

// newLoopbackNetNS creates the namespace on a locked OS thread and puts the
// thread back into the caller's namespace. A thread that cannot go back is
// never unlocked, so the Go runtime retires it with the goroutine.
func newLoopbackNetNS() (*netNS, error) {
	dir, err := owner.MkdirTemp(netnsPattern)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "net")
	if err := os.WriteFile(path, nil, 0o444); err != nil {
		_ = owner.RemoveTemp(dir)
		return nil, err
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer orig.Close()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("unshare: %w", err)
			return
		}
		err = loopbackUp()
		if err == nil {
			err = unix.Mount("/proc/thread-self/ns/net", path, "", unix.MS_BIND, "")
		}
		if serr := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); serr != nil {
			errc <- errors.Join(err, fmt.Errorf("returning to the original network namespace: %w", serr))
			return // the thread stays locked and dies with this goroutine
		}
		runtime.UnlockOSThread()
		errc <- err
	}()
	if err := <-errc; err != nil {
		_ = unix.Unmount(path, unix.MNT_DETACH)
		_ = owner.RemoveTemp(dir)
		return nil, err
	}
	return &netNS{dir: dir, path: path}, nil
}

// loopbackUp sets IFF_UP on lo in the calling thread's network namespace.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("reading lo's flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("setting lo up: %w", err)
	}
	return nil
}

func (n *netNS) remove() error {
	if n == nil {
		return nil
	}
	if err := unmountNetNS(n.dir); err != nil {
		return err
	}
	return owner.RemoveTemp(n.dir)
}

// netnsPattern names the namespaces' folders in TMPDIR.
const netnsPattern = "imagectl-netns-"

// unmountNetNS lets go of the namespace kept in dir (its bind mount).
func unmountNetNS(dir string) error {
	err := unix.Unmount(filepath.Join(dir, "net"), unix.MNT_DETACH)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
		err = nil // not mounted
	}
	return err
}

// sweepNetNS removes the namespaces of runs that were killed (their
// process gone): each one's mount and folder.
func sweepNetNS() ([]string, error) {
	return owner.SweepTemp(netnsPattern, unmountNetNS)
}

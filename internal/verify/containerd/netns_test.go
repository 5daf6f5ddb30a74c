package containerd

import (
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// netnsLinks lists the interfaces of the network namespace at path and
// which are up, from a thread that joins it and comes back.
func netnsLinks(path string) ([]string, map[string]bool, error) {
	type res struct {
		names []string
		up    map[string]bool
		err   error
	}
	c := make(chan res, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			c <- res{err: err}
			return
		}
		defer orig.Close()
		f, err := os.Open(path)
		if err != nil {
			c <- res{err: err}
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			c <- res{err: err}
			return
		}
		ifs, err := net.Interfaces()
		r := res{up: map[string]bool{}, err: err}
		for _, i := range ifs {
			r.names = append(r.names, i.Name)
			r.up[i.Name] = i.Flags&net.FlagUp != 0
		}
		if unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		c <- r
	}()
	r := <-c
	return r.names, r.up, r.err
}

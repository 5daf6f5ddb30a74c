// Package owner marks what a run leaves on its host while it works
// (containers in containerd, folders under TMPDIR, the mounts in them) with
// the process that made it, so that a later run can tell what a killed run
// left (its process is gone) from what a live one still uses, and remove
// only the former. A run that ends, or is interrupted, removes its own; a
// SIGKILL leaves them, and the next run sweeps them.
//
// An owner is this host's boot, the process's PID namespace, its PID and
// its start time (which tells a PID reused since from the owner). An owner
// of another PID namespace is never taken for gone: its process cannot be
// seen from here.
package owner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Self is this process's owner string ("" where /proc cannot tell it, and
// then nothing this process makes is ever swept).
func Self() string {
	if p, err := self(); err == nil {
		return p.String()
	}
	return ""
}

var self = sync.OnceValues(func() (proc, error) { return read(os.Getpid()) })

type proc struct {
	boot, pidns string
	pid         int
	start       uint64
}

func (p proc) String() string {
	return fmt.Sprintf("boot=%s pidns=%s pid=%d start=%d", p.boot, p.pidns, p.pid, p.start)
}

// read is the owner of the process pid as seen from this one.
func read(pid int) (proc, error) {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return proc{}, err
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return proc{}, err
	}
	start, err := startTime(pid)
	if err != nil {
		return proc{}, err
	}
	return proc{boot: strings.TrimSpace(string(boot)), pidns: ns, pid: pid, start: start}, nil
}

// startTime is field 22 of /proc/PID/stat: when the process started, in
// clock ticks since boot. The fields are counted after the command's
// closing parenthesis, since the command may hold spaces and parentheses.
func startTime(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command", pid)
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state), so field 22 is f[19].
	if len(f) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	return strconv.ParseUint(f[19], 10, 64)
}

func parse(s string) (proc, bool) {
	var p proc
	seen := 0
	for _, kv := range strings.Fields(s) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || v == "" {
			return proc{}, false
		}
		var err error
		switch k {
		case "boot":
			p.boot = v
		case "pidns":
			p.pidns = v
		case "pid":
			p.pid, err = strconv.Atoi(v)
		case "start":
			p.start, err = strconv.ParseUint(v, 10, 64)
		default:
			return proc{}, false
		}
		if err != nil {
			return proc{}, false
		}
		seen++
	}
	return p, seen == 4 && p.pid > 0
}

// Gone reports whether the process an owner string names has ended: the
// host has booted since, or no process of that PID and start time runs in
// this PID namespace. A string that is not an owner, an owner of another
// PID namespace and anything /proc cannot answer are not gone.
func Gone(s string) bool {
	o, ok := parse(s)
	if !ok {
		return false
	}
	me, err := self()
	if err != nil {
		return false
	}
	if o.boot != me.boot {
		return true
	}
	if o.pidns != me.pidns {
		return false
	}
	start, err := startTime(o.pid)
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	return err == nil && start != o.start
}

// markerSuffix names the file beside a folder of MkdirTemp's that holds
// its owner. It lies beside the folder, not in it: the folders are mounted
// into containers, whose contents they are.
const markerSuffix = ".owner"

// MkdirTemp is os.MkdirTemp in TMPDIR with the folder's owner recorded
// beside it, for SweepTemp. A folder it makes is removed with RemoveTemp.
func MkdirTemp(pattern string) (string, error) {
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		return "", err
	}
	if s := Self(); s != "" {
		if err := os.WriteFile(dir+markerSuffix, []byte(s+"\n"), 0o644); err != nil {
			os.RemoveAll(dir)
			return "", err
		}
	}
	return dir, nil
}

// RemoveTemp removes a folder of MkdirTemp's and then its owner's record.
func RemoveTemp(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.Remove(dir + markerSuffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// SweepTemp removes the folders of MkdirTemp(pattern) in TMPDIR whose
// owner is gone, calling release on each first (to unmount what the owner
// had mounted in it), and returns the folders it removed. A folder that
// cannot be removed is an error naming it; the rest are still swept.
func SweepTemp(pattern string, release func(dir string) error) ([]string, error) {
	markers, err := filepath.Glob(filepath.Join(os.TempDir(), pattern+"*"+markerSuffix))
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, m := range markers {
		b, err := os.ReadFile(m)
		if err != nil || !Gone(strings.TrimSpace(string(b))) {
			continue // another sweep took it, or its owner runs
		}
		dir := strings.TrimSuffix(m, markerSuffix)
		if release != nil {
			if err := release(dir); err != nil {
				errs = append(errs, fmt.Errorf("releasing %s, left by an ended run: %w", dir, err))
				continue
			}
		}
		if err := RemoveTemp(dir); err != nil {
			errs = append(errs, fmt.Errorf("removing %s, left by an ended run: %w", dir, err))
			continue
		}
		removed = append(removed, dir)
	}
	return removed, errors.Join(errs...)
}

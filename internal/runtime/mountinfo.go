package runtime

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
)

// Mount is one line of /proc/self/mountinfo.
type Mount struct {
	MountPoint string `json:"mount_point"`
	FSType     string `json:"fstype"`
	Source     string `json:"source"`
	// Options are the per-mount options followed by the superblock options,
	// e.g. "rw,relatime,vers=4.1".
	Options string `json:"options"`
}

// readMounts parses a mountinfo file (proc(5)).
func readMounts(path string) ([]Mount, error) {
	b, err := readFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading mounts: %w", err)
	}
	return parseMountinfo(bytes.NewReader(b))
}

func parseMountinfo(r io.Reader) ([]Mount, error) {
	var out []Mount
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// 36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		a, b := strings.Fields(pre), strings.Fields(post)
		if len(a) < 6 || len(b) < 2 {
			continue
		}
		m := Mount{MountPoint: unescapeOctal(a[4]), FSType: b[0], Source: unescapeOctal(b[1]), Options: a[5]}
		if len(b) > 2 {
			m.Options += "," + b[2]
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

// unescapeOctal undoes the kernel's \040-style escaping of spaces, tabs,
// newlines and backslashes in mountinfo fields.
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// mountAt returns the mount whose mount point is exactly path (the last one
// listed, which is the one on top), if any.
func mountAt(mounts []Mount, path string) (Mount, bool) {
	path = filepath.Clean(path)
	var m Mount
	found := false
	for _, x := range mounts {
		if x.MountPoint == path {
			m, found = x, true
		}
	}
	return m, found
}

// mountOf returns the mount that holds path: the longest mount point that
// is path or one of its parents.
func mountOf(mounts []Mount, path string) (Mount, bool) {
	path = filepath.Clean(path)
	var best Mount
	found := false
	for _, x := range mounts {
		if x.MountPoint == path || x.MountPoint == "/" || strings.HasPrefix(path, x.MountPoint+"/") {
			if !found || len(x.MountPoint) >= len(best.MountPoint) {
				best, found = x, true
			}
		}
	}
	return best, found
}

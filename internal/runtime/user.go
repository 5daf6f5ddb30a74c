package runtime

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Identity is the user a child process runs as: the runtime block's user,
// with the supplementary groups /etc/group gives it.
type Identity struct {
	Name   string
	UID    int
	GID    int
	Groups []int
	Home   string
}

// credential is what the child switches to between fork and exec
// (setgroups, setgid, setuid, in that order).
func (id *Identity) credential() *syscall.Credential {
	if id == nil {
		return nil
	}
	c := &syscall.Credential{Uid: uint32(id.UID), Gid: uint32(id.GID), Groups: []uint32{}}
	for _, g := range id.Groups {
		c.Groups = append(c.Groups, uint32(g))
	}
	return c
}

// userEnv returns env with HOME, USER and LOGNAME of id.
func userEnv(env []string, id *Identity) []string {
	out := append([]string(nil), env...)
	out = setEnv(out, "HOME", id.Home)
	out = setEnv(out, "USER", id.Name)
	return setEnv(out, "LOGNAME", id.Name)
}

// resolveIdentity makes the Identity of u: the supplementary groups are the
// groups of groupFile (/etc/group) that list u.Name as a member, besides
// the primary group. A missing or unreadable group file gives none.
func resolveIdentity(u User, groupFile string) *Identity {
	id := &Identity{Name: u.Name, UID: u.UID, GID: u.GID, Home: u.HomeDir(), Groups: []int{u.GID}}
	b, err := readFile(groupFile)
	if err != nil {
		return id
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Split(sc.Text(), ":")
		if len(f) < 4 || strings.HasPrefix(f[0], "#") {
			continue
		}
		gid, err := strconv.Atoi(f[2])
		if err != nil || gid == u.GID {
			continue
		}
		for _, m := range strings.Split(f[3], ",") {
			if strings.TrimSpace(m) == u.Name {
				id.Groups = append(id.Groups, gid)
				break
			}
		}
	}
	return id
}

// giveTo makes path (one file or directory, not what it holds) owned by id.
func giveTo(path string, id *Identity) error {
	if err := os.Lchown(path, id.UID, id.GID); err != nil {
		return fmt.Errorf("giving %s to %s (%d:%d): %w", path, id.Name, id.UID, id.GID, err)
	}
	return nil
}

// ensureHome creates the user's home (0755) when it is missing and gives it
// to the user when the init created it or it belongs to root (an empty
// volume mounted there); a home that belongs to someone else is left alone.
func ensureHome(id *Identity) error {
	fi, err := os.Stat(id.Home)
	if err != nil {
		if err := os.MkdirAll(filepath.Dir(id.Home), 0o755); err != nil {
			return fmt.Errorf("creating the home %s: %w", id.Home, err)
		}
		if err := os.Mkdir(id.Home, 0o755); err != nil && !os.IsExist(err) {
			return fmt.Errorf("creating the home %s: %w", id.Home, err)
		}
		return giveTo(id.Home, id)
	}
	if !fi.IsDir() {
		return fmt.Errorf("the home %s is not a directory", id.Home)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid == 0 {
		return giveTo(id.Home, id)
	}
	return nil
}

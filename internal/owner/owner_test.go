package owner

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestGone(t *testing.T) {
	me, ok := parse(Self())
	if !ok {
		t.Fatalf("Self() = %q: not an owner", Self())
	}
	if Gone(Self()) {
		t.Fatal("Gone(Self()) = true")
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	child, err := read(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if Gone(child.String()) {
		t.Error("a running child is gone")
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if !Gone(child.String()) {
		t.Error("a child that ended (and was reaped) is not gone")
	}

	reused := me
	reused.start++ // this PID, started at another time: the PID was reused
	otherBoot := me
	otherBoot.boot = "00000000-0000-0000-0000-000000000000"
	otherNS := child
	otherNS.pidns = "pid:[1]"
	for _, c := range []struct {
		name, owner string
		want        bool
	}{
		{"a reused PID", reused.String(), true},
		{"an earlier boot", otherBoot.String(), true},
		{"another PID namespace", otherNS.String(), false},
		{"empty", "", false},
		{"not an owner", "pid=1", false},
		{"an unknown field", me.String() + " x=1", false},
		{"a bad PID", strings.Replace(me.String(), "pid=", "pid=x", 1), false},
	} {
		if got := Gone(c.owner); got != c.want {
			t.Errorf("%s: Gone(%q) = %v, want %v", c.name, c.owner, got, c.want)
		}
	}
}

func TestSweepTemp(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	live, err := MkdirTemp("imagectl-x-")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(live + markerSuffix); err != nil || strings.TrimSpace(string(b)) != Self() {
		t.Fatalf("%s%s = %q, %v; want this process's owner", live, markerSuffix, b, err)
	}
	ended, err := MkdirTemp("imagectl-x-")
	if err != nil {
		t.Fatal(err)
	}
	me, _ := parse(Self())
	me.boot = "00000000-0000-0000-0000-000000000000"
	if err := os.WriteFile(ended+markerSuffix, []byte(me.String()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ended, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	other, err := MkdirTemp("imagectl-y-") // another pattern: not swept
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other+markerSuffix, []byte(me.String()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	var released []string
	removed, err := SweepTemp("imagectl-x-", func(dir string) error {
		released = append(released, dir)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(removed, []string{ended}) || !slices.Equal(released, []string{ended}) {
		t.Errorf("SweepTemp removed %v, released %v; want %s alone", removed, released, ended)
	}
	for _, p := range []string{ended, ended + markerSuffix} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s is left (%v)", p, err)
		}
	}
	for _, p := range []string{live, live + markerSuffix, other} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}

	// A release that fails leaves the folder, and says which.
	if err := os.Remove(other + markerSuffix); err != nil {
		t.Fatal(err)
	}
	failing, _ := MkdirTemp("imagectl-x-")
	if err := os.WriteFile(failing+markerSuffix, []byte(me.String()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = SweepTemp("imagectl-x-", func(string) error { return os.ErrPermission })
	if err == nil || !strings.Contains(err.Error(), failing) {
		t.Errorf("SweepTemp with a failing release = %v, want an error naming %s", err, failing)
	}
	if _, err := os.Lstat(failing); err != nil {
		t.Errorf("%s was removed although its release failed: %v", failing, err)
	}

	if err := RemoveTemp(live); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{live, live + markerSuffix} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("RemoveTemp left %s (%v)", p, err)
		}
	}
}

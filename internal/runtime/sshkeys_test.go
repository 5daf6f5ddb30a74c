package runtime

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func needKeygen(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("needs ssh-keygen (openssh-client, installed by hack/deps.sh)")
	}
}

func TestSSHHostKeysGeneratedWhenSshdInstalled(t *testing.T) {
	needKeygen(t)
	root := t.TempDir()
	write(t, filepath.Join(root, "usr/sbin/sshd"), "#!/bin/sh\n")
	env := []string{"PATH=" + os.Getenv("PATH")}
	r, err := ensureSSHHostKeys(context.Background(), root, env)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Sshd || len(r.Generated) != 3 {
		t.Fatalf("ensureSSHHostKeys = %+v, want sshd found and 3 keys generated", r)
	}
	keys := map[string][]byte{}
	for _, typ := range sshHostKeyTypes {
		key := filepath.Join(root, "etc/ssh/ssh_host_"+typ+"_key")
		fi, err := os.Stat(key)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", key, fi.Mode().Perm())
		}
		// ssh-keygen itself must read the pair back as a key of that type.
		out, err := exec.Command("ssh-keygen", "-l", "-f", key+".pub").CombinedOutput()
		if err != nil || !strings.Contains(strings.ToLower(string(out)), "("+typ+")") {
			t.Errorf("ssh-keygen -l -f %s.pub: %v %s", key, err, out)
		}
		keys[key], _ = os.ReadFile(key)
	}

	// A restart keeps the keys it has.
	r, err = ensureSSHHostKeys(context.Background(), root, env)
	if err != nil || len(r.Generated) != 0 {
		t.Fatalf("second start: %+v, %v; want nothing generated", r, err)
	}
	for key, before := range keys {
		if after, _ := os.ReadFile(key); !bytes.Equal(before, after) {
			t.Errorf("%s changed on the second start", key)
		}
	}

	// One missing: only that one is made.
	ed := filepath.Join(root, "etc/ssh/ssh_host_ed25519_key")
	os.Remove(ed)
	os.Remove(ed + ".pub")
	r, err = ensureSSHHostKeys(context.Background(), root, env)
	if err != nil || len(r.Generated) != 1 || r.Generated[0] != ed {
		t.Fatalf("after removing the ed25519 key: %+v, %v; want only it generated", r, err)
	}
}

func TestSSHHostKeysNotWithoutSshd(t *testing.T) {
	root := t.TempDir()
	r, err := ensureSSHHostKeys(context.Background(), root, []string{"PATH=" + os.Getenv("PATH")})
	if err != nil || r.Sshd || len(r.Generated) != 0 {
		t.Fatalf("no sshd: %+v, %v; want nothing done", r, err)
	}
	if _, err := os.Stat(filepath.Join(root, "etc/ssh")); !os.IsNotExist(err) {
		t.Errorf("etc/ssh was created without sshd: %v", err)
	}
}

func TestSSHHostKeysFailureIsReported(t *testing.T) {
	needKeygen(t)
	root := t.TempDir()
	write(t, filepath.Join(root, "usr/sbin/sshd"), "")
	// /etc/ssh is a file: nothing can be written there.
	write(t, filepath.Join(root, "etc/ssh"), "")
	_, err := ensureSSHHostKeys(context.Background(), root, []string{"PATH=" + os.Getenv("PATH")})
	if err == nil || !strings.Contains(err.Error(), "sshd will refuse to start") {
		t.Fatalf("ensureSSHHostKeys with /etc/ssh unwritable = %v, want an error saying what breaks", err)
	}
	_, err = ensureSSHHostKeys(context.Background(), t.TempDir(), nil)
	if err != nil {
		t.Fatalf("no sshd and no PATH: %v", err)
	}
	root2 := t.TempDir()
	write(t, filepath.Join(root2, "usr/sbin/sshd"), "")
	_, err = ensureSSHHostKeys(context.Background(), root2, []string{"PATH=" + t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "ssh-keygen is not in PATH") {
		t.Fatalf("no ssh-keygen: %v, want an error naming it", err)
	}
}

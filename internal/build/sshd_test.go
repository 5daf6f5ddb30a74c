package build

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"imagectl/internal/lock"
)

// keyOnly is what sshd -T of OpenSSH 9.2 prints (in part) with the drop-in.
const keyOnly = `port 22
permitrootlogin without-password
passwordauthentication no
kbdinteractiveauthentication no
permitemptypasswords no
usepam yes
`

func TestSSHVerdict(t *testing.T) {
	files := func(m map[string]string) func(string) string { return func(n string) string { return m[n] } }
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  map[string]string // offending; nil: no error
		err   bool
	}{
		{"no sshd", map[string]string{"state": "absent\n"}, nil, false},
		{"key only", map[string]string{"state": "present", "rc0": "0", "out0": keyOnly, "rc1": "0", "out1": keyOnly}, nil, false},
		{"passwords on", map[string]string{"state": "present", "rc0": "0", "out0": strings.Replace(keyOnly, "passwordauthentication no", "passwordauthentication yes", 1)},
			map[string]string{"passwordauthentication": "yes"}, true},
		{"root by password in a Match block", map[string]string{"state": "present", "rc0": "0", "out0": keyOnly, "rc1": "0", "out1": strings.Replace(keyOnly, "permitrootlogin without-password", "permitrootlogin yes", 1)},
			map[string]string{"permitrootlogin": "yes"}, true},
		{"keyboard-interactive and empty passwords", map[string]string{"state": "present", "rc0": "0", "out0": "permitrootlogin no\npasswordauthentication no\nkbdinteractiveauthentication yes\npermitemptypasswords yes\n"},
			map[string]string{"kbdinteractiveauthentication": "yes", "permitemptypasswords": "yes"}, true},
		{"sshd -T fails", map[string]string{"state": "present", "rc0": "255", "err0": "/etc/ssh/sshd_config line 3: Bad configuration option: Foo"}, map[string]string{}, true},
		{"no result", map[string]string{}, map[string]string{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := sshVerdict("img", files(tc.files))
			if !tc.err {
				if err != nil {
					t.Fatalf("sshVerdict = %v, want nil", err)
				}
				return
			}
			var pe *SSHPolicyError
			if !errors.As(err, &pe) {
				t.Fatalf("sshVerdict = %v, want an SSHPolicyError", err)
			}
			if len(tc.want) > 0 {
				if d := cmp.Diff(tc.want, pe.Offending); d != "" {
					t.Errorf("offending (-want +got):\n%s", d)
				}
			} else if pe.Output == "" {
				t.Errorf("SSHPolicyError %+v carries no sshd output", pe)
			}
			if !strings.Contains(err.Error(), "image img") {
				t.Errorf("error %q does not name the image", err)
			}
		})
	}
}

func TestSSHSteps(t *testing.T) {
	if s := systemScript(); !strings.Contains(s, "rm -f /etc/ssh/ssh_host_*") {
		t.Errorf("systemScript:\n%s\nwant the host keys removed", s)
	}
	l := &lock.Lock{}
	if s := runtimeStepScript(l); strings.Contains(s, SSHKeyOnlyDropIn) {
		t.Errorf("runtime step without ssh_key_only writes the drop-in:\n%s", s)
	}
	l.Policy.SSHKeyOnly = true
	s := runtimeStepScript(l)
	for _, want := range []string{runtimeScript, "if [ -x /usr/sbin/sshd ]", SSHKeyOnlyDropIn, "PasswordAuthentication no", "KbdInteractiveAuthentication no", "PermitRootLogin prohibit-password"} {
		if !strings.Contains(s, want) {
			t.Errorf("runtime step with ssh_key_only lacks %q:\n%s", want, s)
		}
	}
}

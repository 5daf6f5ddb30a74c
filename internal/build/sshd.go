package build

import (
	"bufio"
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/moby/buildkit/client/llb"
	gateway "github.com/moby/buildkit/frontend/gateway/client"

	"imagectl/internal/lock"
	"imagectl/internal/shell"
)

// SSHKeyOnlyDropIn is the sshd config drop-in policy.ssh_key_only writes
// when the image has sshd. It sorts first in sshd_config.d, and sshd keeps
// the first value it reads for a keyword, so a later drop-in (a cloud
// image's 50-cloud-init.conf) cannot turn passwords back on; a base whose
// sshd_config does not include sshd_config.d is caught by the check.
const SSHKeyOnlyDropIn = "/etc/ssh/sshd_config.d/00-imagectl-ssh-key-only.conf"

const sshKeyOnlyConfig = `# Written by imagectl for policy.ssh_key_only: keys only, root by key.
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
PermitEmptyPasswords no
`

// hostKeysCleanup removes the host keys openssh-server's postinst generates:
// keys in a layer would be the same in every container of the image, and
// random, so two builds would differ. The init generates them at start.
const hostKeysCleanup = `rm -f /etc/ssh/ssh_host_*`

// systemScript installs the debs (dpkgScript) and removes sshd host keys.
func systemScript() string {
	return dpkgScript + "\n" + hostKeysCleanup
}

// runtimeStepScript installs the runtime config, adds runtime.user when the
// base lacks it (userScript) and, with ssh_key_only,
// writes the drop-in when the image has sshd (from the base or the debs):
// the runtime step runs last, on the finished root filesystem.
func runtimeStepScript(l *lock.Lock) string {
	s := runtimeScript + userScript(l.Runtime.User)
	if l.Policy.SSHKeyOnly {
		s += `
if [ -x /usr/sbin/sshd ]; then
  mkdir -p /etc/ssh/sshd_config.d
  cat > ` + SSHKeyOnlyDropIn + ` <<'IMAGECTL_EOF'
` + sshKeyOnlyConfig + `IMAGECTL_EOF
  chmod 0644 ` + SSHKeyOnlyDropIn + `
fi`
	}
	return s
}

// SSHPolicyError reports an image whose effective sshd configuration
// (sshd -T inside the build) breaks policy.ssh_key_only.
type SSHPolicyError struct {
	Image string
	// For is the connection sshd -T evaluated ("" for the defaults, or
	// "user=root,...").
	For string
	// Offending are the effective settings that allow a password login,
	// keyword -> value as sshd -T printed them.
	Offending map[string]string
	// Output is sshd's own message when sshd -T itself failed.
	Output string
}

func (e *SSHPolicyError) Error() string {
	if len(e.Offending) == 0 {
		return fmt.Sprintf("image %s: policy ssh_key_only: sshd -T could not check the image's sshd configuration: %s", e.Image, strings.TrimSpace(e.Output))
	}
	keys := make([]string, 0, len(e.Offending))
	for k := range e.Offending {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+" "+e.Offending[k])
	}
	ctx := ""
	if e.For != "" {
		ctx = " for " + e.For
	}
	return fmt.Sprintf("image %s: policy ssh_key_only: the image's effective sshd configuration%s allows password logins (sshd -T: %s); %s could not override it: does the base's /etc/ssh/sshd_config include sshd_config.d, or set these in a Match block?",
		e.Image, ctx, strings.Join(parts, ", "), SSHKeyOnlyDropIn)
}

// sshCheckContexts are the connections sshd -T evaluates: its defaults,
// and root from loopback (Match blocks apply only to a connection).
var sshCheckContexts = []string{"", "user=root,host=localhost,addr=127.0.0.1"}

// sshCheckScript runs sshd -T on the image's root filesystem with a
// throwaway host key on /tmp (a tmpfs: nothing of it reaches a layer).
func sshCheckScript() string {
	var b strings.Builder
	b.WriteString(`set -u
if [ ! -x /usr/sbin/sshd ]; then echo absent > /out/state; exit 0; fi
echo present > /out/state
ssh-keygen -q -t ed25519 -N '' -f /tmp/hostkey >/out/keygen.log 2>&1 || { echo 1 > /out/rc0; cp /out/keygen.log /out/err0; exit 0; }
mkdir -p /run/sshd
`)
	for i, c := range sshCheckContexts {
		arg := ""
		if c != "" {
			arg = " -C " + shell.Quote(c)
		}
		fmt.Fprintf(&b, "/usr/sbin/sshd -T -h /tmp/hostkey%s >/out/out%d 2>/out/err%d; echo $? >/out/rc%d\n", arg, i, i, i)
	}
	return b.String()
}

// sshCheckState runs the check on the image's root filesystem; the result
// is the /out directory, never part of the image.
func sshCheckState(root llb.State) llb.State {
	return root.Run(
		llb.Args([]string{"/bin/sh", "-c", sshCheckScript()}),
		llb.Network(llb.NetModeNone),
		llb.AddEnv("PATH", systemPath),
		llb.AddMount("/tmp", llb.Scratch(), llb.Tmpfs()),
		llb.AddMount("/run", llb.Scratch(), llb.Tmpfs()),
		llb.WithCustomName("[policy] sshd -T: ssh_key_only"),
	).AddMount("/out", llb.Scratch())
}

// parseSSHDT reads `sshd -T` output: one "keyword value" per line, keywords
// in lower case.
func parseSSHDT(out string) map[string]string {
	m := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		k, v, _ := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		if k != "" {
			if _, ok := m[k]; !ok {
				m[k] = strings.TrimSpace(v)
			}
		}
	}
	return m
}

// passwordSettings returns the effective settings of cfg that let a
// password (or keyboard-interactive) login in, root's included.
func passwordSettings(cfg map[string]string) map[string]string {
	bad := map[string]string{}
	for _, k := range []string{"passwordauthentication", "kbdinteractiveauthentication", "permitemptypasswords"} {
		if v, ok := cfg[k]; !ok || v != "no" {
			if !ok {
				v = "(not reported)"
			}
			bad[k] = v
		}
	}
	switch v := cfg["permitrootlogin"]; v {
	case "no", "prohibit-password", "without-password", "forced-commands-only":
	default:
		if v == "" {
			v = "(not reported)"
		}
		bad["permitrootlogin"] = v
	}
	return bad
}

// checkSSH solves the check on root and returns an SSHPolicyError when the
// image's sshd allows passwords; nil when it has no sshd.
func checkSSH(ctx context.Context, gc gateway.Client, l *lock.Lock, root llb.State) error {
	platform, err := platformOf(l)
	if err != nil {
		return err
	}
	def, err := sshCheckState(root).Marshal(ctx, llb.Platform(platform))
	if err != nil {
		return fmt.Errorf("marshalling the sshd check: %w", err)
	}
	res, err := gc.Solve(ctx, gateway.SolveRequest{Definition: def.ToPB()})
	if err != nil {
		return fmt.Errorf("running the sshd check of %s: %w", l.Name, err)
	}
	ref, err := res.SingleRef()
	if err != nil {
		return err
	}
	// The image's own steps run first (the solve is lazy): their failure is
	// the build's, not the check's.
	if err := ref.Evaluate(ctx); err != nil {
		return err
	}
	read := func(name string) string {
		b, err := ref.ReadFile(ctx, gateway.ReadRequest{Filename: name})
		if err != nil {
			return ""
		}
		return string(b)
	}
	return sshVerdict(l.Name, read)
}

// sshVerdict judges the check's files (read by name).
func sshVerdict(image string, read func(string) string) error {
	switch strings.TrimSpace(read("state")) {
	case "absent":
		return nil
	case "present":
	default:
		return &SSHPolicyError{Image: image, Output: "the check step wrote no result"}
	}
	for i, c := range sshCheckContexts {
		if rc := strings.TrimSpace(read(fmt.Sprintf("rc%d", i))); rc != "0" {
			return &SSHPolicyError{Image: image, For: c, Output: fmt.Sprintf("exit %s: %s", rc, read(fmt.Sprintf("err%d", i)))}
		}
		if bad := passwordSettings(parseSSHDT(read(fmt.Sprintf("out%d", i)))); len(bad) > 0 {
			return &SSHPolicyError{Image: image, For: c, Offending: bad}
		}
	}
	return nil
}

package resolve

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"imagectl/internal/lock"
)

func TestParsePrintURIs(t *testing.T) {
	sha := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name    string
		in      string
		want    []lock.Deb
		wantErr string
	}{{
		name: "plain",
		in:   "'http://m/debian/pool/main/j/jq/jq_1.6-2.1_amd64.deb' jq_1.6-2.1_amd64.deb 64208 SHA256:" + sha + "\n",
		want: []lock.Deb{{Name: "jq", Version: "1.6-2.1", Arch: "amd64", URL: "http://m/debian/pool/main/j/jq/jq_1.6-2.1_amd64.deb", SHA256: sha, Size: 64208}},
	}, {
		name: "epoch and plus survive",
		in:   "'http://m/debian/pool/main/p/perl/perl-base_5.36.0-7%2bdeb12u1_amd64.deb' perl-base_1%3a5.36.0-7+deb12u1_amd64.deb 10 SHA256:" + strings.ToUpper(sha) + "\n\n",
		want: []lock.Deb{{Name: "perl-base", Version: "1:5.36.0-7+deb12u1", Arch: "amd64", URL: "http://m/debian/pool/main/p/perl/perl-base_5.36.0-7%2bdeb12u1_amd64.deb", SHA256: sha, Size: 10}},
	}, {
		name: "empty: everything is in the base",
		in:   "",
		want: []lock.Deb{},
	}, {
		name:    "md5 only",
		in:      "'http://m/a_1_all.deb' a_1_all.deb 10 MD5Sum:0123456789abcdef0123456789abcdef\n",
		wantErr: "has no SHA256",
	}, {
		name:    "missing fields",
		in:      "'http://m/a_1_all.deb' a_1_all.deb 10\n",
		wantErr: "want 'URL' FILE SIZE HASH",
	}, {
		name:    "bad archive name",
		in:      "'http://m/a.deb' a.deb 10 SHA256:" + sha + "\n",
		wantErr: "is not name_version_arch.deb",
	}, {
		name:    "bad size",
		in:      "'http://m/a_1_all.deb' a_1_all.deb -3 SHA256:" + sha + "\n",
		wantErr: "is not a positive integer",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parsePrintURIs([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parsePrintURIs(%q) = %v, want error containing %q", tc.in, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parsePrintURIs(%q) = %v", tc.in, err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("parsePrintURIs(%q) mismatch (-want +got):\n%s", tc.in, d)
			}
		})
	}
}

func TestDebFileNameRoundTrips(t *testing.T) {
	d := lock.Deb{Name: "perl-base", Version: "1:5.36.0-7+deb12u1", Arch: "amd64"}
	n, v, a, err := splitDebName(debFileName(d))
	if err != nil || n != d.Name || v != d.Version || a != d.Arch {
		t.Errorf("splitDebName(%q) = %q %q %q %v, want %q %q %q", debFileName(d), n, v, a, err, d.Name, d.Version, d.Arch)
	}
}

func TestAptScriptRejectsNonNames(t *testing.T) {
	for _, p := range []string{"jq;id", "$(id)", "JQ", "-o", "a b", "jq=1.6'"} {
		if _, err := aptScript([]string{p}, "3.11"); err == nil {
			t.Errorf("aptScript(%q) = nil error, want a rejection", p)
		}
	}
	for _, p := range []string{"jq", "python3.11", "libstdc++6", "jq=1.6-2.1", "perl-base=1:5.36.0-7+deb12u1", "libc6:amd64"} {
		if _, err := aptScript([]string{p}, "3.11"); err != nil {
			t.Errorf("aptScript(%q) = %v, want nil", p, err)
		}
	}
}

// TestAptScriptUpdatesOnlyWhenAptHasSomethingToAnswer runs the apt step's
// script on this machine with apt-get and apt-cache replaced by recorders:
// a base that has the spec's Python, with no apt packages asked, must not
// run `apt-get update` (on a machine whose mirrors are unreachable it waits
// for apt's timeouts: 250 s on the GPU machine); every other case must.
func TestAptScriptUpdatesOnlyWhenAptHasSomethingToAnswer(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	for _, tc := range []struct {
		name       string
		pkgs       []string
		havePython bool
		offers     string // apt-cache pkgnames python3.
		wantCalls  []string
		wantPath   bool
		wantExtra  string
	}{{
		name: "python in the base, no packages: no apt at all", havePython: true, wantPath: true,
	}, {
		name: "python in the base, packages asked", pkgs: []string{"jq", "tini"}, havePython: true, wantPath: true,
		wantCalls: []string{"update -qq", "install -y --no-install-recommends --print-uris -qq -o Acquire::ForceHash=SHA256 -o Dir::Cache::Archives=TMP jq tini"},
	}, {
		name: "no python in the base, the repositories offer it", offers: "python3.98\npython3.97\n", wantExtra: "python3.98 python3.98-venv",
		wantCalls: []string{"update -qq", "install -y --no-install-recommends --print-uris -qq -o Acquire::ForceHash=SHA256 -o Dir::Cache::Archives=TMP python3.98 python3.98-venv"},
	}, {
		name: "no python in the base, none offered", offers: "python3.97\n",
		wantCalls: []string{"update -qq"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			bin, out, tmp := filepath.Join(root, "bin"), filepath.Join(root, "out"), filepath.Join(root, "tmp")
			for _, d := range []string{bin, out, tmp} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			calls := filepath.Join(root, "calls")
			write := func(name, body string) {
				if err := os.WriteFile(filepath.Join(bin, name), []byte("#!"+sh+"\n"+body), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			write("apt-get", `echo "$*" >>`+calls+"\n")
			write("apt-cache", `printf '`+strings.ReplaceAll(tc.offers, "\n", `\n`)+`'`+"\n")
			if tc.havePython {
				write("python3.98", "exit 0\n")
			}
			script, err := aptScript(tc.pkgs, "3.98")
			if err != nil {
				t.Fatal(err)
			}
			script = strings.NewReplacer("/out/", out+"/", "/tmp/imagectl-apt", tmp).Replace(script)
			cmd := exec.Command(sh, "-c", script)
			cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin"}
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("script: %v\n%s", err, b)
			}
			b, _ := os.ReadFile(calls)
			got := strings.Split(strings.TrimSpace(strings.ReplaceAll(string(b), tmp, "TMP")), "\n")
			if len(b) == 0 {
				got = nil
			}
			if d := cmp.Diff(tc.wantCalls, got); d != "" {
				t.Errorf("apt-get calls (-want +got):\n%s", d)
			}
			files := map[string][]byte{}
			for _, n := range []string{"apt.rc", "python.path", "python.install", "python.offers"} {
				files[n], _ = os.ReadFile(filepath.Join(out, n))
			}
			if rc := strings.TrimSpace(string(files["apt.rc"])); rc != "0" {
				t.Errorf("apt.rc = %q, want 0", rc)
			}
			p := parsePythonProbe(files)
			if want := filepath.Join(bin, "python3.98"); tc.wantPath != (p.path == want) {
				t.Errorf("python path %q, want it %v (%s)", p.path, tc.wantPath, want)
			}
			if got := strings.Join(p.install, " "); got != tc.wantExtra {
				t.Errorf("python install %q, want %q", got, tc.wantExtra)
			}
		})
	}
}

// TestAptErrorRedacted: apt's output in an AptError carries no
// user:password@ of a mirror URL, as pip's does not.
func TestAptErrorRedacted(t *testing.T) {
	f := newFixture(t)
	f.runner.aptRC = "100"
	f.runner.apt = "Err:1 http://builder:s3cret@mirror.internal/debian bookworm InRelease\n  401  Unauthorized\n"
	_, err := Image(context.Background(), f.demo(), f.opts()...)
	var ae *AptError
	if !errors.As(err, &ae) {
		t.Fatalf("Image() = %v, want an *AptError", err)
	}
	if strings.Contains(ae.Output, "s3cret") || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("AptError output %q leaks the password", ae.Output)
	}
	if !strings.Contains(ae.Output, "http://***@mirror.internal/debian") {
		t.Errorf("AptError output %q, want the URL with ***@ in place of the credentials", ae.Output)
	}
}

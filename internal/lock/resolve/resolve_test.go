package resolve

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"imagectl/internal/auth"
	"imagectl/internal/exitcode"
	"imagectl/internal/lock"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

func TestResolveDemo(t *testing.T) {
	f := newFixture(t)
	img := f.demo()
	l, err := Image(context.Background(), img, f.opts()...)
	if err != nil {
		t.Fatalf("Image(demo) = %v", err)
	}
	b, err := lock.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	// The registry and file server ports change between runs.
	got := strings.ReplaceAll(string(b), f.files.URL, "http://INDEX")
	got = strings.ReplaceAll(got, strings.Split(f.base, "/")[0], "REGISTRY")
	got = regexp.MustCompile(`sha256:[0-9a-f]{64}`).ReplaceAllStringFunc(got, func(s string) string {
		if s == l.Spec.InputsDigest || s == l.Digest || s == l.Base.IndexDigest {
			return "sha256:VARIES"
		}
		return s
	})
	golden := filepath.Join("testdata", "demo.lock.json")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("Image(demo) lock mismatch (-want +got):\n%s", d)
	}

	// Parse reads back exactly what Marshal wrote.
	back, err := lock.Parse("demo.lock.json", b)
	if err != nil {
		t.Fatalf("Parse(Marshal(lock)) = %v", err)
	}
	if d := cmp.Diff(l, back); d != "" {
		t.Errorf("Parse(Marshal(lock)) mismatch (-want +got):\n%s", d)
	}

	// A second resolution of the same inputs is byte-identical.
	l2, err := Image(context.Background(), img, f.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	b2, err := lock.Marshal(l2)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, b2) {
		t.Errorf("re-locking the same inputs is not byte-identical:\n%s", cmp.Diff(string(b), string(b2)))
	}

	// The jobs ran on the base by digest, pip with the locked debs.
	pj, ok := f.runner.job("pip resolve")
	if !ok {
		t.Fatal("no pip job ran")
	}
	if want := strings.Split(f.base, ":bookworm")[0] + "@" + l.Base.ManifestDigest; pj.Image != want {
		t.Errorf("pip job image = %q, want %q", pj.Image, want)
	}
	if d := cmp.Diff(l.Apt, pj.Debs); d != "" {
		t.Errorf("pip job debs differ from the locked apt closure (-lock +job):\n%s", d)
	}
	if got, want := string(pj.Files["requirements.txt"]), "demo-core==1.0.0\ndemo-util\n"; got != want {
		t.Errorf("requirements.txt = %q, want %q", got, want)
	}
	// pip saw one index, the lock's proxy on loopback, and ran the locked pip.
	if m := scriptIndex.FindStringSubmatch(pj.Script); m == nil || !strings.HasPrefix(m[1], "http://127.0.0.1:") || strings.Contains(pj.Script, f.files.URL) {
		t.Errorf("pip job script names index %v, want only the loopback proxy:\n%s", m, pj.Script)
	}
	if pj.Resolver == nil || pj.Resolver.SHA256 != fakePip.sha() || l.Resolver.URL != f.files.URL+"/files/"+fakePip.file() || l.Resolver.Size != int64(len(fakePip.body())) {
		t.Errorf("resolver in job %+v, in lock %+v: want pip 23.0.1 by sha256, its upstream URL and size in the lock", pj.Resolver, l.Resolver)
	}
	if l.Python != (lock.Python{Version: "3.11.2", Path: "/usr/bin/python3.11", Provider: "base"}) {
		t.Errorf("lock python = %+v", l.Python)
	}
}

// TestResolvePythonFromApt locks an image whose base has no Python: the apt
// step adds python3.X and python3.X-venv (the fake's apt output stands for
// their closure), and the lock records the interpreter the pip step found.
func TestResolvePythonFromApt(t *testing.T) {
	f := newFixture(t)
	f.runner.aptPy = true
	l, err := Image(context.Background(), f.demo(), f.opts()...)
	if err != nil {
		t.Fatalf("Image() = %v", err)
	}
	if l.Python != (lock.Python{Version: "3.11.2", Path: "/usr/bin/python3.11", Provider: "apt"}) {
		t.Errorf("lock python = %+v, want python3.11 from apt at /usr/bin/python3.11", l.Python)
	}
	aj, _ := f.runner.job("apt resolve")
	for _, want := range []string{"command -v python3.11", "apt-cache pkgnames python3.", "extra='python3.11 python3.11-venv'", `"$@"`} {
		if !strings.Contains(aj.Script, want) {
			t.Errorf("apt script lacks %q:\n%s", want, aj.Script)
		}
	}
}

func TestResolveErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(f *fixture, img *spatch)
		want  string
		is    func(error) bool
	}{{
		name: "pip conflict shows pip's explanation",
		setup: func(f *fixture, _ *spatch) {
			f.runner.pipRC = "1"
			f.runner.pipLog = "ERROR: Cannot install demo-core==1.0.0 and demo-util==1.1.0 because these package versions have conflicting dependencies.\n\nThe conflict is caused by:\n    The user requested demo-core==1.0.0\n    demo-util 1.1.0 depends on demo-core>=1.1\n"
		},
		want: "demo-util 1.1.0 depends on demo-core>=1.1",
		is:   func(err error) bool { var e *PipError; return errors.As(err, &e) },
	}, {
		name: "apt failure shows apt's explanation",
		setup: func(f *fixture, _ *spatch) {
			f.runner.aptRC = "100"
		},
		want: "Unable to locate package nosuch",
		is:   func(err error) bool { var e *AptError; return errors.As(err, &e) },
	}, {
		name: "forbidden pip package asked for",
		setup: func(_ *fixture, s *spatch) {
			s.forbidden = []string{"Demo_Util"}
		},
		want: "policy forbids pip package demo-util, and the resolved closure has demo-util 1.0.0: the spec asks for it",
		is:   func(err error) bool { var e *ForbiddenError; return errors.As(err, &e) },
	}, {
		name: "forbidden pip package pulled in",
		setup: func(f *fixture, s *spatch) {
			f.runner.wheels = []fakeWheel{
				{name: "demo-core", version: "1.0.0", requires: []string{"demo-dep>=1; python_version >= '3'"}},
				{name: "demo-dep", version: "1.2.0"},
				{name: "demo-util", version: "1.0.0", requested: true, requires: []string{"Demo_Core>=1.0"}},
			}
			s.forbidden = []string{"demo-dep"}
		},
		want: "policy forbids pip package demo-dep, and the resolved closure has demo-dep 1.2.0, pulled in by demo-util -> demo-core -> demo-dep",
		is:   func(err error) bool { var e *ForbiddenError; return errors.As(err, &e) },
	}, {
		name: "forbidden apt package pulled in",
		setup: func(f *fixture, s *spatch) {
			f.runner.aptShow = "Package: jq\nVersion: 1.6-2.1\nDepends: libjq1 (= 1.6-2.1), libc6 (>= 2.34)\n\n" +
				"Package: libjq1\nVersion: 1.6-2.1\nDepends: libc6 (>= 2.14),\n libonig-virtual | libfoo\n\n" +
				"Package: libonig5\nVersion: 6.9.8-1\nProvides: libonig-virtual (= 6.9.8)\nDepends: libc6 (>= 2.14)\n\n"
			s.forbidden = []string{"libonig5"}
		},
		want: "policy forbids apt package libonig5, and the resolved closure has libonig5 6.9.8-1, pulled in by jq -> libjq1 -> libonig5",
		is:   func(err error) bool { var e *ForbiddenError; return errors.As(err, &e) },
	}, {
		name: "forbidden apt package pulled in by the provisioned python",
		setup: func(f *fixture, s *spatch) {
			f.runner.aptPy = true
			f.runner.apt += "'http://deb.example/debian/pool/main/p/python3.11/python3.11_3.11.2-6_amd64.deb' python3.11_3.11.2-6_amd64.deb 1000 SHA256:" + strings.Repeat("3", 64) + "\n"
			f.runner.aptShow = "Package: jq\nDepends: libjq1\n\nPackage: libjq1\nDepends: libc6\n\n" +
				"Package: python3.11\nVersion: 3.11.2-6\nDepends: libonig5 (>= 6)\n\nPackage: libonig5\nVersion: 6.9.8-1\n\n"
			s.forbidden = []string{"libonig5"}
		},
		want: "pulled in by python3.11 -> libonig5",
		is:   func(err error) bool { var e *ForbiddenError; return errors.As(err, &e) },
	}, {
		name: "forbidden apt package, apt's records unreadable",
		setup: func(_ *fixture, s *spatch) {
			s.forbidden = []string{"libonig5"}
		},
		want: "policy forbids apt package libonig5, and the resolved closure has libonig5 6.9.8-1 (what pulled it in could not be traced: apt-cache show exited 100: E: no records)",
		is:   func(err error) bool { var e *ForbiddenError; return errors.As(err, &e) },
	}, {
		name: "base without the python and whose repositories do not offer it",
		setup: func(f *fixture, _ *spatch) {
			f.runner.noPy = true
		},
		want: "has no python3.11 and its apt repositories offer python3.99; the spec asks python 3.11",
		is:   func(err error) bool { var e *PythonError; return errors.As(err, &e) && e.Want == "3.11" },
	}, {
		name: "python minor differs from the base's",
		setup: func(f *fixture, _ *spatch) {
			f.runner.python = "3.12.1"
		},
		want: "python3.11 in the base is 3.12.1, the spec asks python 3.11",
	}, {
		name: "shell metacharacters in an apt name",
		setup: func(_ *fixture, s *spatch) {
			s.apt = []string{"jq; rm -rf /"}
		},
		want: "is not a Debian package name",
	}, {
		name: "option in a pip requirement",
		setup: func(_ *fixture, s *spatch) {
			s.pip = []string{"--index-url=http://evil/"}
		},
		want: "is not a PEP 508 requirement",
	}, {
		name: "unknown base",
		setup: func(f *fixture, s *spatch) {
			s.base = strings.Replace(f.base, "debian-base", "nosuch", 1)
		},
		want: "resolving base",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			var s spatch
			tc.setup(f, &s)
			img := f.demo()
			if s.forbidden != nil {
				img.Policy.ForbiddenPackages = s.forbidden
			}
			if s.index != "" {
				img.PipIndexes = []string{s.index}
			}
			if s.apt != nil {
				img.Apt = s.apt
			}
			if s.pip != nil {
				img.Pip = s.pip
			}
			if s.base != "" {
				img.Base = s.base
			}
			_, err := Image(context.Background(), img, f.opts()...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Image() = %v, want an error containing %q", err, tc.want)
			}
			if tc.is != nil && !tc.is(err) {
				t.Errorf("Image() = %T, wrong error type", err)
			}
		})
	}
}

type spatch struct {
	forbidden, apt, pip []string
	index, base         string
}

func TestResolveTorchPins(t *testing.T) {
	torch := func(nccl, cudnn string) fakeWheel {
		return fakeWheel{name: "torch", version: "2.6.0+cu124", requested: true, requires: []string{
			`nvidia-nccl-cu12==` + nccl + `; platform_system == "Linux" and platform_machine == "x86_64"`,
			`nvidia-cudnn-cu12==` + cudnn + `; platform_system == "Linux" and platform_machine == "x86_64"`,
			`filelock`, `sympy==1.13.1; python_version >= "3.9"`,
		}}
	}
	for _, tc := range []struct {
		name    string
		wheels  []fakeWheel
		wantErr string
	}{{
		name: "pins match",
		wheels: []fakeWheel{torch("2.21.5", "9.1.0.70"),
			{name: "nvidia-nccl-cu12", version: "2.21.5"}, {name: "nvidia-cudnn-cu12", version: "9.1.0.70"}},
	}, {
		name:    "cudnn pin differs",
		wheels:  []fakeWheel{torch("2.21.5", "9.5.1.17"), {name: "nvidia-cudnn-cu12", version: "9.5.1.17"}},
		wantErr: "torch 2.6.0+cu124 pins nvidia-cudnn-cu12==9.5.1.17, the spec's cudnn is 9.1.0.70",
	}, {
		name:    "nccl pin differs",
		wheels:  []fakeWheel{torch("2.20.5", "9.1.0.70")},
		wantErr: "pins nvidia-nccl-cu12==2.20.5, the spec's nccl is 2.21.5",
	}, {
		name:    "wrong variant",
		wheels:  []fakeWheel{{name: "torch", version: "2.6.0+cu118", requested: true}},
		wantErr: "a cu118 wheel; the spec's variant is cu124",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.runner.wheels = tc.wheels
			img := f.demo()
			img.Pip, img.Frozen = nil, nil
			img.CUDA, img.Torch, img.NCCL, img.CUDNN, img.DriverFloor = "12.4", "2.6.0", "2.21.5", "9.1.0.70", "525.60.13"
			img.TorchIndex = f.files.URL + "/"
			l, err := Image(context.Background(), img, f.opts()...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Image() = %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Image() = %v", err)
			}
			want := lock.Core{CUDA: "12.4", TorchVariant: "cu124", Torch: "2.6.0+cu124", Python: "3.11", NCCL: "2.21.5",
				CUDNN: "9.1.0.70", DriverFloor: "525.60.13", Archs: []string{"sm_80", "sm_90"}}
			if d := cmp.Diff(want, l.Core); d != "" {
				t.Errorf("Image() core mismatch (-want +got):\n%s", d)
			}
			pj, _ := f.runner.job("pip resolve")
			if got := string(pj.Files["requirements.txt"]); !strings.HasSuffix(got, "torch==2.6.0\n") {
				t.Errorf("requirements.txt = %q, want torch==2.6.0", got)
			}
			for _, w := range l.Pip {
				if w.Index != f.files.URL+"/whl/cu124" {
					t.Errorf("%s came from %q, want the torch variant's index", w.Name, w.Index)
				}
			}
			if want := []string{f.files.URL + "/whl/cu124", f.files.URL + "/simple/"}; !cmp.Equal(l.PipIndexes, want) {
				t.Errorf("pip indexes = %q, want %q", l.PipIndexes, want)
			}
			if l.Runtime.Image.Torch != "2.6.0+cu124" || l.Runtime.DriverFloor != "525.60.13" {
				t.Errorf("runtime facts = %+v, floor %q; want torch and the floor from the core", l.Runtime.Image, l.Runtime.DriverFloor)
			}
		})
	}
}

func TestResolveCredentialsStayOut(t *testing.T) {
	f := newFixture(t)
	const secret = "s3cret-pw"
	host := strings.Split(strings.TrimPrefix(f.files.URL, "http://"), ":")[0]
	netrc := filepath.Join(t.TempDir(), "netrc")
	if err := os.WriteFile(netrc, []byte("machine "+host+" login alice password "+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := auth.New(auth.Config{NetrcFile: netrc})
	if err != nil {
		t.Fatal(err)
	}
	authed := 0
	inner := f.files.Config.Handler
	f.files.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "alice" || p != secret {
			http.Error(w, "auth", http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodHead {
			authed++
		}
		inner.ServeHTTP(w, r)
	})
	l, err := Image(context.Background(), f.demo(), f.opts(WithAccess(a))...)
	if err != nil {
		t.Fatalf("Image(with netrc) = %v", err)
	}
	if authed != len(l.Pip)+2 {
		t.Errorf("%d authenticated HEAD requests, want %d (the index, the wheels and the resolver)", authed, len(l.Pip)+2)
	}
	b, _ := lock.Marshal(l)
	pj, _ := f.runner.job("pip resolve")
	if !pj.Netrc {
		t.Error("pip job does not mount the netrc secret")
	}
	def, err := pj.Definition(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var llb []byte
	for _, d := range def.Def {
		llb = append(llb, d...)
	}
	for what, b := range map[string][]byte{"lock": b, "script": []byte(pj.Script), "requirements": pj.Files["requirements.txt"], "LLB": llb} {
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("the %s contains the index password", what)
		}
	}
}

// TestResolveMovesURLCredentials: an index URL's user:password@ is taken
// out of it: pip gets it as the netrc secret, the size requests as basic
// auth; the lock records the URL without it, its inputs digest is the one
// of the spec without it, and the password is in neither.
func TestResolveMovesURLCredentials(t *testing.T) {
	f := newFixture(t)
	const secret = "url-s3cret"
	inner := f.files.Config.Handler
	f.files.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "bob" || p != secret {
			http.Error(w, "auth", http.StatusUnauthorized)
			return
		}
		inner.ServeHTTP(w, r)
	})
	img := f.demo()
	clean := img.PipIndexes[0]
	img.PipIndexes = []string{strings.Replace(clean, "://", "://bob:"+secret+"@", 1)}
	l, err := Image(context.Background(), img, f.opts()...)
	if err != nil {
		t.Fatalf("Image(index with userinfo) = %v", err)
	}
	if len(l.PipIndexes) != 1 || l.PipIndexes[0] != clean {
		t.Errorf("lock pip_indexes = %q, want [%q]", l.PipIndexes, clean)
	}
	plain := f.demo()
	if want, _ := InputsDigest(plain); l.Spec.InputsDigest != want {
		t.Errorf("inputs digest = %s, want %s (the spec without the credentials)", l.Spec.InputsDigest, want)
	}
	b, _ := lock.Marshal(l)
	if bytes.Contains(b, []byte(secret)) {
		t.Error("the lock contains the password")
	}
	pj, _ := f.runner.job("pip resolve")
	if !pj.Netrc || pj.Access == nil || !strings.Contains(string(pj.Access.Netrc()), "password "+secret) {
		t.Errorf("pip job: netrc mounted %v, want the moved credential in its netrc secret", pj.Netrc)
	}
	if strings.Contains(string(pj.Files["requirements.txt"]), secret) {
		t.Error("requirements.txt contains the password")
	}
}

// TestResolveIndexRefused: an index that answers 401 to the credentials
// (or their absence) fails the lock before pip with an *auth.Error naming
// the index host and the netrc tried, exit 77, never the password.
func TestResolveIndexRefused(t *testing.T) {
	f := newFixture(t)
	f.files.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "auth", http.StatusUnauthorized)
	})
	host := strings.TrimPrefix(f.files.URL, "http://")
	netrc := filepath.Join(t.TempDir(), "netrc")
	if err := os.WriteFile(netrc, []byte("machine 127.0.0.1 login alice password wrong-pw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := auth.New(auth.Config{NetrcFile: netrc})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Image(context.Background(), f.demo(), f.opts(WithAccess(a))...)
	var ae *auth.Error
	if !errors.As(err, &ae) || ae.Host != host || ae.Kind != "index" {
		t.Fatalf("Image() against a refusing index = %v, want an index *auth.Error for %s", err, host)
	}
	if exitcode.Code(err) != exitcode.AuthFailed || !strings.Contains(err.Error(), netrc) || strings.Contains(err.Error(), "wrong-pw") {
		t.Errorf("error %q (exit %d): want exit %d, the netrc named, no password", err, exitcode.Code(err), exitcode.AuthFailed)
	}
	if _, ok := f.runner.job("pip resolve"); ok {
		t.Error("pip ran although the index refused the credentials")
	}
}

package discover

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"imagectl/internal/scan/report"
)

func TestParseReleaseTag(t *testing.T) {
	for _, tc := range []struct {
		tag, image, month string
		n                 int
		ok                bool
	}{
		{"demo-2026.12", "demo", "2026-12", 0, true},
		{"pytorch-2.6-cu121-py3.11-2027.01.2", "pytorch-2.6-cu121-py3.11", "2027-01", 2, true},
		{"demo", "", "", 0, false},
		{"2.6-cu121", "", "", 0, false},
		{"demo-2026.13", "", "", 0, false},
	} {
		t.Run(tc.tag, func(t *testing.T) {
			image, month, n, ok := ParseReleaseTag(tc.tag)
			if image != tc.image || month != tc.month || n != tc.n || ok != tc.ok {
				t.Errorf("ParseReleaseTag(%q) = %q, %q, %d, %v; want %q, %q, %d, %v", tc.tag, image, month, n, ok, tc.image, tc.month, tc.n, tc.ok)
			}
		})
	}
}

func TestSupport(t *testing.T) {
	s, err := NewSupport("2026-11", 12)
	if err != nil || s.End != "2027-10-31" {
		t.Fatalf("NewSupport(2026-11, 12) = %+v, %v; want end 2027-10-31", s, err)
	}
	for day, want := range map[string]string{
		"2027-09-30": Supported, "2027-10-01": Ending, "2027-10-31": Ending, "2027-11-01": Expired,
	} {
		now, _ := time.Parse(time.DateOnly, day)
		if got := s.State(now); got != want {
			t.Errorf("State(%s) = %s, want %s", day, got, want)
		}
	}
	b, _ := s.Predicate()
	if back, err := ParseSupport(b); err != nil || *back != *s {
		t.Errorf("ParseSupport(Predicate()) = %+v, %v; want %+v", back, err, s)
	}
	if _, err := NewSupport("2026-11", 0); err == nil {
		t.Error("NewSupport(0 months) = nil error")
	}
}

func TestDiffPackages(t *testing.T) {
	spdx := func(pkgs ...string) []byte {
		var b strings.Builder
		b.WriteString(`{"packages":[{"name":"demo","versionInfo":"sha256:x","primaryPackagePurpose":"CONTAINER"}`)
		for _, p := range pkgs {
			f := strings.Fields(p)
			b.WriteString(`,{"name":"` + f[1] + `","versionInfo":"` + f[2] + `","externalRefs":[{"referenceType":"purl","referenceLocator":"pkg:` + f[0] + `/` + f[1] + `@` + f[2] + `"}]}`)
		}
		b.WriteString("]}")
		return []byte(b.String())
	}
	old, err := spdxPackages(spdx("pypi demo-util 1.0.0", "pypi demo-core 1.0.0", "deb jq 1.6", "pypi gone 1"))
	if err != nil {
		t.Fatal(err)
	}
	new, err := spdxPackages(spdx("pypi demo-util 1.1.0", "pypi demo-core 1.0.0", "deb jq 1.6", "deb curl 8"))
	if err != nil {
		t.Fatal(err)
	}
	added, removed, changed := diffPackages(old, new)
	if diff := cmp.Diff([]Package{{"deb", "curl", "8"}}, added); diff != "" {
		t.Errorf("added (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]Package{{"pypi", "gone", "1"}}, removed); diff != "" {
		t.Errorf("removed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]PackageChange{{"pypi", "demo-util", "1.0.0", "1.1.0"}}, changed); diff != "" {
		t.Errorf("changed (-want +got):\n%s", diff)
	}
}

func TestDiffFindings(t *testing.T) {
	old := &report.Result{Findings: []report.Finding{{ID: "CVE-1", Package: "jq"}, {ID: "CVE-2", Package: "pip"},
		{ID: "CVE-3", Package: "curl", Suppressed: &report.Suppression{Status: "not_affected"}}}}
	new := &report.Result{Findings: []report.Finding{{ID: "CVE-2", Package: "pip"}, {ID: "CVE-4", Package: "zlib"}, {ID: "CVE-3", Package: "curl"}}}
	fixed, introduced := diffFindings(old, new)
	ids := func(fs []report.Finding) (out []string) {
		for _, f := range fs {
			out = append(out, f.ID)
		}
		return out
	}
	if diff := cmp.Diff([]string{"CVE-1"}, ids(fixed)); diff != "" {
		t.Errorf("fixed (-want +got):\n%s", diff)
	}
	// CVE-3 was suppressed by VEX in old: new to the user now.
	if diff := cmp.Diff([]string{"CVE-3", "CVE-4"}, ids(introduced)); diff != "" {
		t.Errorf("introduced (-want +got):\n%s", diff)
	}
}

func TestDefaultKeys(t *testing.T) {
	cwd := t.TempDir()
	home := t.TempDir()
	t.Chdir(cwd)
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv(KeysDirEnv, "")
	if _, err := DefaultKeys(); err == nil {
		t.Fatal("DefaultKeys() with no keys anywhere = nil error")
	}
	user := filepath.Join(home, ".config", "imagectl", "keys")
	env := filepath.Join(t.TempDir(), "k")
	for _, d := range []string{user, env, filepath.Join(cwd, "keys")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, SigningKeyFile), []byte("pub"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	k, err := DefaultKeys()
	if err != nil || k.Signing != filepath.Join("keys", SigningKeyFile) {
		t.Errorf("DefaultKeys() = %+v, %v; want keys/ of the working directory first", k, err)
	}
	os.RemoveAll(filepath.Join(cwd, "keys"))
	t.Setenv(KeysDirEnv, env)
	if k, err = DefaultKeys(); err != nil || k.Dir != env {
		t.Errorf("DefaultKeys() = %+v, %v; want $%s", k, err, KeysDirEnv)
	}
	t.Setenv(KeysDirEnv, "")
	if k, err = DefaultKeys(); err != nil || k.Dir != user || k.Verifier != filepath.Join(user, VerifierKeyFile) {
		t.Errorf("DefaultKeys() = %+v, %v; want %s", k, err, user)
	}
}

// TestReleasesGroupsTags lists a repository of ggcr's in-process registry:
// tags grouped by digest, release and moving tags apart, newest month
// first, cosign's sha256-* tags left out; nothing verifies without keys.
func TestReleasesGroupsTags(t *testing.T) {
	s := httptest.NewServer(registry.New())
	defer s.Close()
	repo, err := name.NewRepository(strings.TrimPrefix(s.URL, "http://") + "/ml/demo")
	if err != nil {
		t.Fatal(err)
	}
	nov, _ := random.Image(64, 1)
	dec, _ := random.Image(64, 1)
	for tag, img := range map[string]v1.Image{"demo-2026.11": nov, "demo-2026.12": dec, "demo": dec, "sha256-abc.sig": nov} {
		if err := remote.Write(repo.Tag(tag), img); err != nil {
			t.Fatal(err)
		}
	}
	rs, err := Releases(context.Background(), repo)
	if err != nil {
		t.Fatalf("Releases() = %v", err)
	}
	var got []string
	for _, r := range rs {
		got = append(got, r.Month+" "+strings.Join(r.Tags, ",")+" "+strings.Join(r.Moving, ","))
		if r.Verified || len(r.Refusals) == 0 {
			t.Errorf("release %s verified without keys: %+v", r.Tag(), r)
		}
	}
	if diff := cmp.Diff([]string{"2026-12 demo-2026.12 demo", "2026-11 demo-2026.11 "}, got); diff != "" {
		t.Errorf("Releases() (-want +got):\n%s", diff)
	}
}

package discover

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"imagectl/internal/bump"
	"imagectl/internal/exitcode"
	"imagectl/internal/lock"
	"imagectl/internal/scan/report"
	"imagectl/internal/sign"
)

const testPassword = "discover-test"

func testLock() *lock.Lock {
	return &lock.Lock{
		SchemaVersion:   lock.SchemaVersion,
		Name:            "demo",
		Spec:            lock.Source{Path: "specs/demo.hcl", InputsDigest: "sha256:" + strings.Repeat("a", 64)},
		SourceDateEpoch: 1764460800,
		Core:            lock.Core{CUDA: "12.4", Torch: "2.6.0", TorchVariant: "cu124", Python: "3.11", DriverFloor: "550.54.14"},
		Base:            lock.Base{Ref: "example/debian:bookworm", ManifestDigest: "sha256:" + strings.Repeat("b", 64), Platform: "linux/amd64"},
		Pip:             []lock.Wheel{{Name: "demo-util", Version: "1.0.0", Filename: "demo_util-1.0.0-py3-none-any.whl", URL: "http://index/demo_util.whl", SHA256: strings.Repeat("d", 64)}},
	}
}

// signedRelease pushes a random image tagged tag to repo and signs it with
// key: signature, lock, an SPDX SBOM of pkgs ("type name version") and a
// scan finding ids (each in jq).
func signedRelease(t *testing.T, ctx context.Context, repo name.Repository, tag, key string, pkgs, ids []string) name.Digest {
	t.Helper()
	img, err := random.Image(2048, 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(repo.Tag(tag), img); err != nil {
		t.Fatal(err)
	}
	h, _ := img.Digest()
	d := repo.Digest(h.String())
	opts := []sign.Option{sign.WithKey(key, []byte(testPassword))}
	if err := sign.Sign(ctx, d, opts...); err != nil {
		t.Fatal(err)
	}
	lp, err := sign.LockPredicate(testLock())
	if err != nil {
		t.Fatal(err)
	}
	var spdx strings.Builder
	spdx.WriteString(`{"spdxVersion":"SPDX-2.3","packages":[`)
	for i, p := range pkgs {
		f := strings.Fields(p)
		if i > 0 {
			spdx.WriteString(",")
		}
		spdx.WriteString(`{"name":"` + f[1] + `","versionInfo":"` + f[2] + `","externalRefs":[{"referenceCategory":"PACKAGE-MANAGER","referenceType":"purl","referenceLocator":"pkg:` + f[0] + `/` + f[1] + `@` + f[2] + `"}]}`)
	}
	spdx.WriteString("]}")
	r := &report.Result{Image: d.String(), FinishedOn: time.Now().UTC(), DB: report.DBInfo{Built: time.Now().UTC()}}
	for _, id := range ids {
		r.Findings = append(r.Findings, report.Finding{ID: id, Package: "jq", Installed: "1.6", Severity: "High", Type: "deb"})
	}
	vp, err := report.Predicate(r)
	if err != nil {
		t.Fatal(err)
	}
	for typ, pred := range map[string][]byte{sign.LockPredicateType: lp, sign.SPDXPredicateType: []byte(spdx.String()), report.VulnPredicateType: vp} {
		if err := sign.Attest(ctx, d, typ, pred, opts...); err != nil {
			t.Fatalf("Attest(%s) = %v", typ, err)
		}
	}
	return d
}

func TestCompareAndReleases(t *testing.T) {
	ctx := context.Background()
	s := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer s.Close()
	repo, err := name.NewRepository(strings.TrimPrefix(s.URL, "http://") + "/ml/demo")
	if err != nil {
		t.Fatal(err)
	}
	key, pub, err := sign.GenerateKeyPair(t.TempDir(), []byte(testPassword))
	if err != nil {
		t.Fatal(err)
	}
	old := signedRelease(t, ctx, repo, "demo-2026.11", key, []string{"pypi demo-util 1.0.0", "deb jq 1.6"}, []string{"CVE-2026-32316", "CVE-2026-1"})
	new := signedRelease(t, ctx, repo, "demo-2026.12", key, []string{"pypi demo-util 1.1.0", "deb jq 1.6", "deb curl 8"}, []string{"CVE-2026-1", "CVE-2026-2"})
	opts := []Option{WithKeys([]string{pub}, nil)}

	d, err := Compare(ctx, old, new, opts...)
	if err != nil {
		t.Fatalf("Compare() = %v", err)
	}
	if diff := cmp.Diff([]PackageChange{{Type: "pypi", Name: "demo-util", Old: "1.0.0", New: "1.1.0"}}, d.Changed); diff != "" {
		t.Errorf("Compare() changed (-want +got):\n%s", diff)
	}
	if len(d.Added) != 1 || d.Added[0].Name != "curl" || len(d.Removed) != 0 {
		t.Errorf("Compare() added %v, removed %v; want curl added", d.Added, d.Removed)
	}
	if len(d.Fixed) != 1 || d.Fixed[0].ID != "CVE-2026-32316" || len(d.Introduced) != 1 || d.Introduced[0].ID != "CVE-2026-2" {
		t.Errorf("Compare() fixed %v, new %v; want CVE-2026-32316 fixed, CVE-2026-2 new", d.Fixed, d.Introduced)
	}
	if d.Old.Lock == nil || d.Old.Lock.Torch != "2.6.0" || d.Old.Size == 0 || d.New.Layers != 3 || d.LayersAdded != 3 {
		t.Errorf("Compare() sides = %+v / %+v, layers added %d", d.Old, d.New, d.LayersAdded)
	}
	if !strings.Contains(d.Summary(), "demo-util 1.0.0 -> 1.1.0") || !strings.Contains(d.Summary(), "1 fixed CVE-2026-32316") {
		t.Errorf("Summary() = %q", d.Summary())
	}

	// An unsigned input is refused with exit 5.
	img, _ := random.Image(512, 1)
	if err := remote.Write(repo.Tag("unsigned"), img); err != nil {
		t.Fatal(err)
	}
	h, _ := img.Digest()
	_, err = Compare(ctx, old, repo.Digest(h.String()), opts...)
	var ue *UnsignedError
	if !errors.As(err, &ue) || exitcode.Code(err) != exitcode.PromotionRefused {
		t.Errorf("Compare(unsigned) = %v (exit %d), want an *UnsignedError, exit 5", err, exitcode.Code(err))
	}

	// Releases: the lock is read, but without a verification the gates refuse.
	rs, err := Releases(ctx, repo, opts...)
	if err != nil {
		t.Fatalf("Releases() = %v", err)
	}
	if len(rs) != 3 || rs[0].Tag() != "demo-2026.12" || rs[0].Lock == nil || rs[0].Lock.DriverFloor != "550.54.14" || rs[0].Verified ||
		!strings.Contains(strings.Join(rs[0].Refusals, " "), "verification") || len(rs[0].Platforms) != 1 {
		t.Errorf("Releases() = %+v", rs)
	}

	// Nothing passes the gates: bump's target is stuck, saying why.
	res, err := NewResolver(opts...)
	if err != nil {
		t.Fatal(err)
	}
	_, err = res.Target(ctx, repo)
	var stuck *bump.StuckError
	if !errors.As(err, &stuck) || !strings.Contains(stuck.Reason, "no release passes pin's gates") || !strings.Contains(stuck.Reason, "demo-2026.12") {
		t.Errorf("Target() = %v, want a *bump.StuckError naming the refused releases", err)
	}

	// ResolveRef: a bare tag of the base repository.
	got, err := ResolveRef(ctx, "demo-2026.11", &repo, opts...)
	if err != nil || got.String() != old.String() {
		t.Errorf("ResolveRef(demo-2026.11) = %v, %v; want %s", got, err, old)
	}
}

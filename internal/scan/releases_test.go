package scan_test

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"imagectl/internal/exitcode"
	"imagectl/internal/releasefile"
	"imagectl/internal/sbom/sbomtest"
	"imagectl/internal/scan"
	"imagectl/internal/scan/report"
	"imagectl/internal/scan/scantest"
	"imagectl/internal/sign"
	"imagectl/internal/testenv"
)

const testPassword = "scan-test-password"

// releasedDemo is a demo-shaped release in ggcr's in-process registry:
// each image pushed to the release repository and signed there with its
// SBOM by the sign stage; platforms > 0 makes the release an image index
// of that many platform images (linux/amd64, linux/arm64).
type releasedDemo struct {
	images    string // the images directory holding demo/releases.json
	release   string // the release repository
	priv, pub string
	source    name.Digest   // what releases.json records
	children  []name.Digest // the platform images of an index
}

func newReleasedDemo(t *testing.T, platforms int) *releasedDemo {
	t.Helper()
	s := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(s.Close)
	reg := strings.TrimPrefix(s.URL, "http://")
	d := &releasedDemo{images: filepath.Join(t.TempDir(), "images"), release: reg + "/ml/demo"}
	var err error
	if d.priv, d.pub, err = sign.GenerateKeyPair(t.TempDir(), []byte(testPassword)); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	l := demoLock()
	l.Normalize()
	if l.Digest, err = l.ContentDigest(); err != nil {
		t.Fatal(err)
	}
	img, err := sbomtest.Image(l)
	if err != nil {
		t.Fatal(err)
	}
	push := func(img v1.Image) name.Digest {
		h, _ := img.Digest()
		ref, err := name.NewDigest(d.release + "@" + h.String())
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(ref, img); err != nil {
			t.Fatal(err)
		}
		if err := sign.SignAndAttest(ctx, ref, l, sign.Builder{}, sign.WithKey(d.priv, []byte(testPassword))); err != nil {
			t.Fatalf("SignAndAttest(%s) = %v", ref, err)
		}
		return ref
	}
	if platforms == 0 {
		d.source = push(img)
	} else {
		idx := mutate.IndexMediaType(empty.Index, "application/vnd.oci.image.index.v1+json")
		for i, arch := range []string{"amd64", "arm64"}[:platforms] {
			// Two different images: the second with one more (empty) layer.
			pi := img
			if i > 0 {
				if pi, err = mutate.Config(img, v1.Config{Labels: map[string]string{"platform": arch}}); err != nil {
					t.Fatal(err)
				}
			}
			d.children = append(d.children, push(pi))
			idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: pi, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
		}
		h, _ := idx.Digest()
		d.source, _ = name.NewDigest(d.release + "@" + h.String())
		if err := remote.WriteIndex(d.source, idx); err != nil {
			t.Fatal(err)
		}
	}
	if err := releasefile.Record(filepath.Join(d.images, "demo", releasefile.FileName), "demo", d.release,
		releasefile.Release{Source: d.source.String(), Month: "2026-12", Tags: []string{"1.0-2026.12"}}, "1.0"); err != nil {
		t.Fatal(err)
	}
	return d
}

func (d *releasedDemo) rescan(t *testing.T, db *scan.DB, policies map[string]report.Policy) ([]scan.Rescan, error) {
	t.Helper()
	return scan.Releases(context.Background(), d.images, d.pub, db, policies, []sign.Option{sign.WithKey(d.priv, []byte(testPassword))})
}

var demoPolicy = map[string]report.Policy{"demo": {MaxSeverity: "high", FixableOnly: true, MaxDBAge: scan.DefaultMaxDBAge}}

// TestReleasesFindsNewCVE: the first re-scan of a promoted digest, with a
// database holding only the low pip advisory, reports it as new and
// breaks nothing; a later database that adds the Debian jq record (high,
// fixed) makes the next re-scan report jq alone as new and break the
// policy (*BreaksPolicyError, exit 5, naming the CVE, package, installed
// and fix version); each re-scan is attested, so the one after that finds
// nothing new and passes. Without a policy nothing breaks.
func TestReleasesFindsNewCVE(t *testing.T) {
	d := newReleasedDemo(t, 0)
	ctx := context.Background()
	db1 := openDB(t, scantest.BuildDB(t, time.Time{}, scantest.PipHg))
	db2 := openDB(t, scantest.BuildDB(t, time.Time{}, scantest.PipHg, scantest.JQ))

	res, err := d.rescan(t, db1, demoPolicy)
	if err != nil {
		t.Fatalf("Releases(db1) = %v", err)
	}
	if len(res) != 1 || res[0].Digest != d.source.String() || res[0].Month != "2026-12" || res[0].Previous != "" ||
		len(res[0].New) != 1 || res[0].New[0].ID != "GHSA-mq26-g339-26xf" || len(res[0].Breaking) != 0 {
		t.Fatalf("Releases(db1) = %+v, want one re-scan of %s with GHSA-mq26-g339-26xf new and nothing breaking", res, d.source)
	}
	if r, err := report.Latest(ctx, d.source, d.pub); err != nil || r.DB.Digest != db1.Digest {
		t.Fatalf("the re-scan was not attested: Latest = %+v, %v", r, err)
	}

	res, err = d.rescan(t, db2, demoPolicy)
	var be *scan.BreaksPolicyError
	if !errors.As(err, &be) || exitcode.Code(err) != exitcode.PromotionRefused {
		t.Fatalf("Releases(db2) = %v, want a *BreaksPolicyError (exit 5)", err)
	}
	for _, want := range []string{"demo 2026-12", d.source.String(), "CVE-2026-32316", "jq 1.6-2.1+deb12u2", "1.6-2.1+deb12u3"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Releases(db2) error %q does not name %q", err, want)
		}
	}
	if len(res) != 1 || res[0].Previous == "" || len(res[0].New) != 1 || res[0].New[0].ID != "CVE-2026-32316" ||
		len(res[0].Breaking) != 1 || res[0].Breaking[0].ID != "CVE-2026-32316" || res[0].Findings != 2 {
		t.Errorf("Releases(db2) = %+v, want jq's CVE alone new and breaking, 2 findings, a previous scan", res)
	}
	// The daily job's metrics: a policy broken by a new finding is the
	// re-scan's result, not its failure; jq's CVE is a new fixable high;
	// Prometheus parses the file and the rules evaluate over it (nothing
	// fires: no new critical, the re-scan just ran).
	metrics := filepath.Join(t.TempDir(), "rescan.prom")
	if err := scan.WriteRescanTextfile(metrics, res, err, time.Now()); err != nil {
		t.Fatal(err)
	}
	testenv.CheckMetrics(t, metrics)
	testenv.EvalRules(t, metrics, nil, map[string]float64{
		`sum(imagectl_rescan_success)`:                                        1,
		`sum(imagectl_scan_new_findings{severity="high", fixable="true"})`:    1,
		`count(imagectl_scan_new_findings{severity="critical"}) or vector(0)`: 0,
		`sum(imagectl_scan_findings{image="demo", month="2026-12"})`:          2,
	})

	res, err = d.rescan(t, db2, demoPolicy)
	if err != nil || len(res) != 1 || len(res[0].New) != 0 || len(res[0].Breaking) != 0 {
		t.Errorf("Releases(db2 again) = %+v, %v; want nothing new", res, err)
	}
	if _, err := d.rescan(t, db2, nil); err != nil {
		t.Errorf("Releases(no policy) = %v, want nil", err)
	}
}

// TestReleasesVEX: the image's images/demo/vex.json is applied, so a
// finding it marks not_affected breaks no policy.
func TestReleasesVEX(t *testing.T) {
	d := newReleasedDemo(t, 0)
	vex := `{"@context": "https://openvex.dev/ns/v0.2.0", "@id": "https://platform.example/vex/demo", "author": "platform team",
 "timestamp": "2026-12-01T00:00:00Z", "version": 1,
 "statements": [{"vulnerability": {"name": "CVE-2026-32316"}, "products": [{"@id": "pkg:oci/demo", "subcomponents": [{"@id": "pkg:deb/debian/jq"}]}],
   "status": "not_affected", "justification": "vulnerable_code_not_in_execute_path"}]}`
	if err := os.WriteFile(filepath.Join(d.images, "demo", scan.VEXFile), []byte(vex), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := d.rescan(t, openDB(t, scantest.BuildDB(t, time.Time{}, scantest.JQ)), demoPolicy)
	if err != nil {
		t.Fatalf("Releases(jq suppressed by VEX) = %v, want nil", err)
	}
	if len(res) != 1 || len(res[0].New) != 1 || res[0].New[0].Suppressed == nil || res[0].New[0].Suppressed.Status != "not_affected" {
		t.Errorf("Releases = %+v, want the jq finding new and suppressed", res)
	}
}

// TestReleasesIndex: a multi-platform release is re-scanned per platform
// image (each with its own SBOM), each result attested on that image and
// reported with its platform and index; the index gets none.
func TestReleasesIndex(t *testing.T) {
	d := newReleasedDemo(t, 2)
	ctx := context.Background()
	res, err := d.rescan(t, openDB(t, scantest.BuildDB(t, time.Time{}, scantest.JQ)), demoPolicy)
	var be *scan.BreaksPolicyError
	if !errors.As(err, &be) || len(be.Rescans) != 2 {
		t.Fatalf("Releases(index) = %v, want both platform images breaking the policy", err)
	}
	if !strings.Contains(err.Error(), "linux/arm64 "+d.children[1].String()) {
		t.Errorf("error %q does not name the arm64 image", err)
	}
	if len(res) != 2 {
		t.Fatalf("Releases(index) = %d re-scans, want 2", len(res))
	}
	for i, want := range []string{"linux/amd64", "linux/arm64"} {
		if res[i].Platform != want || res[i].Digest != d.children[i].String() || res[i].Index != d.source.String() {
			t.Errorf("re-scan %d = %s %s (index %s), want %s %s (index %s)", i, res[i].Platform, res[i].Digest, res[i].Index, want, d.children[i], d.source)
		}
		if _, err := report.Latest(ctx, d.children[i], d.pub); err != nil {
			t.Errorf("%s image: Latest = %v, want its re-scan attested", want, err)
		}
	}
	var none *sign.NoAttestationError
	if _, err := report.Latest(ctx, d.source, d.pub); !errors.As(err, &none) {
		t.Errorf("index: Latest = %v, want no vuln attestation on the index", err)
	}
}

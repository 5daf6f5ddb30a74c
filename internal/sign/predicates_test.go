package sign_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"

	"imagectl/internal/lock"
	"imagectl/internal/sign"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, got, "", "  "); err != nil {
		t.Fatalf("%s is not JSON: %v", name, err)
	}
	pretty.WriteByte('\n')
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, pretty.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if diff := cmp.Diff(string(want), pretty.String()); diff != "" {
		t.Errorf("%s differs from %s (-want +got):\n%s", name, path, diff)
	}
}

func TestPredicatesGolden(t *testing.T) {
	l := testLock()
	l.Apt = append(l.Apt, lock.Deb{Name: "libgomp1", Version: "12.2.0-14", Arch: "i386", URL: "http://mirror/pool/libgomp1_i386.deb", SHA256: "e"})
	if _, err := lock.Marshal(l); err != nil {
		t.Fatal(err)
	}
	prov, err := sign.Provenance(l, sign.Builder{
		ID: "https://ci.example/imagectl", BuildKitVersion: "v0.34.2",
		SourceRepo: "https://git.example/platform/images", SourceCommit: testCommit,
		StartedOn: time.Unix(1764460800, 0), FinishedOn: time.Unix(1764461400, 0),
	})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "provenance.json", prov)
	lp, err := sign.LockPredicate(l)
	if err != nil {
		t.Fatal(err)
	}
	back, err := lock.Parse("predicate", lp)
	if err != nil || back.Digest != l.Digest {
		t.Errorf("LockPredicate does not read back as the lock: %v", err)
	}
	// The same lock always gives the same document.
	prov2, _ := sign.Provenance(l, sign.Builder{
		ID: "https://ci.example/imagectl", BuildKitVersion: "v0.34.2",
		SourceRepo: "https://git.example/platform/images", SourceCommit: testCommit,
		StartedOn: time.Unix(1764460800, 0), FinishedOn: time.Unix(1764461400, 0),
	})
	if !bytes.Equal(prov, prov2) {
		t.Error("Provenance is not deterministic")
	}
	// The bindings' validator refuses what SLSA does not allow: a
	// shortened commit is not a digest.
	if _, err := sign.Provenance(l, sign.Builder{SourceCommit: "0123abc"}); err == nil || !strings.Contains(err.Error(), "full commit hash") {
		t.Errorf("Provenance(short commit) = %v, want an error asking for the full hash", err)
	}
	// A lock edited after its digest was computed is refused.
	l.Pip[0].Version = "9.9.9"
	if _, err := sign.LockPredicate(l); err == nil {
		t.Error("LockPredicate of a tampered lock = nil error")
	}
}

func TestStatement(t *testing.T) {
	ref, _ := name.NewDigest("registry.example/staging/pytorch@sha256:" + strings.Repeat("a", 64))
	for _, bad := range []string{`[1,2]`, `"x"`, `{"a":`, `{"size": 9007199254740993}`, `{"a": [{"b": -9007199254740993}]}`} {
		if _, err := sign.NewStatement(ref, sign.LockPredicateType, []byte(bad)); err == nil {
			t.Errorf("NewStatement(predicate %s) = nil error, want one", bad)
		}
	}
	if _, err := sign.NewStatement(ref, sign.LockPredicateType, []byte(`{"size": 9007199254740992, "f": 1.5e300}`)); err != nil {
		t.Errorf("NewStatement(numbers a float64 holds) = %v", err)
	}
	if _, err := sign.NewStatement(ref, "", []byte(`{}`)); err == nil {
		t.Error("NewStatement(no predicate type) = nil error, want one")
	}
	// Statements imagectl wrote before the bindings (v0.1) still read.
	old := `{"_type":"https://in-toto.io/Statement/v0.1","predicateType":"https://imagectl.dev/attestations/lock/v1",` +
		`"subject":[{"name":"registry.example/staging/pytorch","digest":{"sha256":"` + strings.Repeat("a", 64) + `"}}],"predicate":{"b":2,"a":1}}`
	st, pred, err := sign.ParseStatement([]byte(old))
	if err != nil || st.GetPredicateType() != sign.LockPredicateType || string(pred) != `{"b":2,"a":1}` {
		t.Errorf("ParseStatement(v0.1) = %v, %s, %v", st, pred, err)
	}
	for name, bad := range map[string]string{
		"no subject":   `{"_type":"https://in-toto.io/Statement/v1","predicateType":"x","predicate":{}}`,
		"another type": `{"_type":"https://example.com/Statement","predicateType":"x","subject":[{"digest":{"sha256":"` + strings.Repeat("a", 64) + `"}}],"predicate":{}}`,
		"short digest": `{"_type":"https://in-toto.io/Statement/v1","predicateType":"x","subject":[{"digest":{"sha256":"abc"}}],"predicate":{}}`,
	} {
		if _, _, err := sign.ParseStatement([]byte(bad)); err == nil {
			t.Errorf("ParseStatement(%s) = nil error, want one", name)
		}
	}
	// The same statement gives the same bytes (protojson's whitespace is
	// compacted away).
	a, _ := sign.NewStatement(ref, sign.LockPredicateType, []byte(`{"z": 1, "a": [true, null, "x"]}`))
	b, _ := sign.NewStatement(ref, sign.LockPredicateType, []byte(`{"a":[true,null,"x"],"z":1}`))
	if !bytes.Equal(a, b) || bytes.Contains(a, []byte(" ")) {
		t.Errorf("NewStatement is not canonical: %s vs %s", a, b)
	}
}

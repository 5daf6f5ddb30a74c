package sign_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

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
	spdx, err := sign.SPDX(l)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "spdx.json", spdx)
	prov, err := sign.Provenance(l, sign.Builder{
		ID: "https://ci.example/imagectl", BuildKitVersion: "v0.34.2",
		SourceRepo: "https://git.example/platform/images", SourceCommit: "0123456789abcdef",
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
	// The same lock always gives the same documents.
	spdx2, _ := sign.SPDX(l)
	if !bytes.Equal(spdx, spdx2) {
		t.Error("SPDX is not deterministic")
	}
	// A lock edited after its digest was computed is refused.
	l.Pip[0].Version = "9.9.9"
	if _, err := sign.LockPredicate(l); err == nil {
		t.Error("LockPredicate of a tampered lock = nil error")
	}
}

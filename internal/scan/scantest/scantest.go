// Package scantest builds small real grype v6 vulnerability databases for
// tests, with grype's own database builder from vunnel-format advisory
// records (internal/scan/testdata/vunnel: real Debian and GitHub advisory
// records for packages the demo image contains).
package scantest

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/OneOfOne/xxhash"
	"github.com/anchore/grype/grype/db"
	"github.com/anchore/grype/grype/db/provider"
	v6 "github.com/anchore/grype/grype/db/v6"
	dbbuild "github.com/anchore/grype/grype/db/v6/build"
	"github.com/bmatcuk/doublestar/v4"
)

// Records is the vunnel fixture directory.
func Records() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata", "vunnel")
}

// Record names of the fixture (provider/results/... globs).
const (
	JQ       = "debian/**/cve-2026-32316.json"      // jq, debian:12, fixed in 1.6-2.1+deb12u3
	PipTar   = "github/**/ghsa-4xh5-x5gv-qwph.json" // pip < 25.3, CVE-2025-8869, medium
	PipHg    = "github/**/ghsa-mq26-g339-26xf.json" // pip < 23.3, CVE-2023-5752, low
	AllFixes = "**"
)

// BuildDB builds a v6 database directory from the fixture records that
// match the globs (AllFixes: all of them) with grype's builder
// (db.Build, as grype-db does from vunnel workspaces) and returns it. A
// non-zero built rewrites the database's build timestamp (a database
// built then).
func BuildDB(t testing.TB, built time.Time, globs ...string) string {
	t.Helper()
	dir, err := Build(t.TempDir(), built, globs...)
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// Build is BuildDB into tmp, for callers without a testing.TB.
func Build(tmp string, built time.Time, globs ...string) (string, error) {
	if len(globs) == 0 {
		globs = []string{AllFixes}
	}
	in := filepath.Join(tmp, "vunnel")
	out := filepath.Join(tmp, "db")
	var states provider.States
	for _, prov := range []string{"debian", "github"} {
		root := filepath.Join(Records(), prov)
		var listing bytes.Buffer
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(Records(), path)
			keep := false
			for _, g := range globs {
				if ok, _ := doublestar.Match(g, filepath.ToSlash(rel)); ok {
					keep = true
				}
			}
			if !keep {
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			dst := filepath.Join(in, rel)
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(dst, b, 0o644); err != nil {
				return err
			}
			inProv, _ := filepath.Rel(root, path)
			fmt.Fprintf(&listing, "%x  %s\n", xxhash.Checksum64(b), filepath.ToSlash(inProv))
			return nil
		})
		if err != nil {
			return "", err
		}
		if listing.Len() == 0 {
			continue
		}
		pdir := filepath.Join(in, prov)
		if err := os.WriteFile(filepath.Join(pdir, "checksums"), listing.Bytes(), 0o644); err != nil {
			return "", err
		}
		meta := fmt.Sprintf(`{"provider": %q, "urls": ["https://%s"], "store": "flat-file", "timestamp": %q, "version": 1,
 "distribution_version": 1, "processor": "vunnel@0.54.0",
 "listing": {"digest": "%x", "path": "checksums", "algorithm": "xxh64"},
 "schema": {"version": "1.0.3", "url": "https://raw.githubusercontent.com/anchore/vunnel/main/schema/provider-workspace-state/schema-1.0.3.json"},
 "stale": false}`, prov, prov, time.Now().UTC().Format(time.RFC3339), xxhash.Checksum64(listing.Bytes()))
		if err := os.WriteFile(filepath.Join(pdir, "metadata.json"), []byte(meta), 0o644); err != nil {
			return "", err
		}
		st, err := provider.ReadState(filepath.Join(pdir, "metadata.json"))
		if err != nil {
			return "", err
		}
		states = append(states, *st)
	}
	if len(states) == 0 {
		return "", fmt.Errorf("no fixture record matches %v", globs)
	}
	if err := db.Build(db.BuildConfig{
		SchemaVersion: v6.ModelVersion, Directory: out, States: states, Timestamp: time.Now(),
		IncludeCPEParts: []string{"o", "a", "h"}, InferNVDFixVersions: true, Hydrate: true, BatchSize: 100,
	}); err != nil {
		return "", fmt.Errorf("building the grype database: %w", err)
	}
	if !built.IsZero() {
		if err := setBuilt(out, built); err != nil {
			return "", err
		}
	}
	return out, nil
}

func setBuilt(dir string, built time.Time) error {
	g, err := v6.NewLowLevelDB(filepath.Join(dir, v6.VulnerabilityDBFileName), false, true, false)
	if err != nil {
		return err
	}
	ts := built.UTC().Round(time.Second)
	err = g.Model(&v6.DBMetadata{}).Where("true").Update("build_timestamp", ts).Error
	if s, derr := g.DB(); derr == nil {
		s.Close()
	}
	return err
}

// Archive packs the database directory dir as a grype archive (.tar.gz,
// what `grype db import` reads) with grype's own packager and returns
// its path.
func Archive(t testing.TB, dir string) string {
	t.Helper()
	if err := dbbuild.CreateArchive(dir, "tar.gz", nil); err != nil {
		t.Fatal(err)
	}
	m, _ := filepath.Glob(filepath.Join(dir, "vulnerability-db_*.tar.gz"))
	if len(m) != 1 {
		t.Fatalf("grype archive in %s: %v", dir, m)
	}
	return m[0]
}

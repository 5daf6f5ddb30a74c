package sbom_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"imagectl/internal/initconfig"
	"imagectl/internal/lock"
	"imagectl/internal/sbom"
	"imagectl/internal/sbom/sbomtest"
)

func image(t *testing.T, layers ...[]sbomtest.File) v1.Image {
	t.Helper()
	var ls []v1.Layer
	for _, files := range layers {
		ly, err := sbomtest.Layer(files...)
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, ly)
	}
	img, err := mutate.AppendLayers(empty.Image, ls...)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

var (
	osRel  = sbomtest.File{Path: "/etc/os-release", Body: "ID=debian\nVERSION_ID=12\n"}
	initF  = sbomtest.File{Path: initconfig.InitPath, Body: "init"}
	debA   = lock.Deb{Name: "a", Version: "1", Arch: "amd64"}
	debB   = lock.Deb{Name: "b", Version: "2", Arch: "amd64"}
	numpy  = lock.Wheel{Name: "numpy", Version: "1.26.4", SHA256: strings.Repeat("d", 64)}
	status = "/var/lib/dpkg/status"
)

// TestReadOverlay: the packages are those of the stacked layers, whiteouts
// and opaque directories included; a locked artifact the image does not
// hold at its version is an error.
func TestReadOverlay(t *testing.T) {
	pipOnly := []sbomtest.File{sbomtest.DistInfo("pip", "23.0.1"), sbomtest.DistInfo("setuptools", "66.1.1")}
	withNumpy := &lock.Lock{Name: "x", Pip: []lock.Wheel{numpy}} // layers: base..., venv, periphery, init
	for _, tc := range []struct {
		name    string
		l       *lock.Lock
		layers  [][]sbomtest.File
		debs    []string // name=version
		python  []string
		wantErr string
	}{{
		name: "upper base layer's database wins",
		l:    &lock.Lock{Name: "x"},
		layers: [][]sbomtest.File{
			{osRel, {Path: status, Body: sbomtest.Status(debA)}},
			{{Path: status, Body: sbomtest.Status(debA, debB) + "\nPackage: removed\nStatus: deinstall ok config-files\nArchitecture: amd64\nVersion: 3\n"}},
			{initF},
		},
		debs: []string{"a=1", "b=2"}, // not the removed one: dpkg keeps only its conffiles
	}, {
		name: "database removed by a whiteout",
		l:    &lock.Lock{Name: "x"},
		layers: [][]sbomtest.File{
			{osRel, {Path: status, Body: sbomtest.Status(debA)}},
			{{Path: "/var/lib/dpkg/.wh.status"}},
			{initF},
		},
	}, {
		name: "opaque directory with a new database in the same layer",
		l:    &lock.Lock{Name: "x"},
		layers: [][]sbomtest.File{
			{osRel, {Path: status, Body: sbomtest.Status(debA)}},
			{{Path: "/var/lib/dpkg/.wh..wh..opq"}, {Path: status, Body: sbomtest.Status(debB)}},
			{initF},
		},
		debs: []string{"b=2"},
	}, {
		name: "a dist-info removed in an upper layer",
		l:    withNumpy,
		layers: [][]sbomtest.File{
			{osRel},
			pipOnly,
			{sbomtest.DistInfo("numpy", "1.26.4"), {Path: initconfig.VenvPath + "/lib/python3.11/site-packages/.wh.setuptools-66.1.1.dist-info"}},
			{initF},
		},
		python: []string{"numpy=1.26.4", "pip=23.0.1"},
	}, {
		name:    "locked wheel at another version",
		l:       withNumpy,
		layers:  [][]sbomtest.File{{osRel}, pipOnly, {sbomtest.DistInfo("numpy", "2.0.0")}, {initF}},
		wantErr: "numpy is 2.0.0 in the image, the lock has 1.26.4",
	}, {
		name:    "locked wheel missing",
		l:       withNumpy,
		layers:  [][]sbomtest.File{{osRel}, pipOnly, {}, {initF}},
		wantErr: "locked wheel numpy 1.26.4 is not installed",
	}, {
		name:    "locked deb missing",
		l:       &lock.Lock{Name: "x", Apt: []lock.Deb{debB}},
		layers:  [][]sbomtest.File{{osRel}, {{Path: status, Body: sbomtest.Status(debA)}}, {initF}},
		wantErr: "locked deb b:amd64 2 is not installed",
	}, {
		name:    "fewer layers than planned",
		l:       withNumpy,
		layers:  [][]sbomtest.File{{initF}},
		wantErr: "fewer than the 4 the lock plans",
	}, {
		name:    "no init",
		l:       &lock.Lock{Name: "x"},
		layers:  [][]sbomtest.File{{osRel}, {}},
		wantErr: "has no " + initconfig.InitPath + " (not an imagectl build)",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			inv, err := sbom.Read(context.Background(), image(t, tc.layers...), tc.l)
			if tc.wantErr != "" {
				var nb *sbom.NotBuiltFromLockError
				if !errors.As(err, &nb) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Read = %v, want a NotBuiltFromLockError containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Read = %v", err)
			}
			var debs, python []string
			for _, p := range inv.Packages {
				switch p.Type {
				case sbom.TypeDeb:
					debs = append(debs, p.Name+"="+p.Version)
				case sbom.TypePyPI:
					python = append(python, p.Name+"="+p.Version)
				}
			}
			if strings.Join(debs, " ") != strings.Join(tc.debs, " ") || strings.Join(python, " ") != strings.Join(tc.python, " ") {
				t.Errorf("Read = debs %v python %v, want %v %v", debs, python, tc.debs, tc.python)
			}
		})
	}
}

// TestReadLicenses: a distribution's PEP 639 License-Expression is its
// license, kept for a locked wheel too; the free-text License field, an
// expression that is not SPDX-shaped, and debs give none.
func TestReadLicenses(t *testing.T) {
	md := func(name, version, headers string) sbomtest.File {
		return sbomtest.File{Path: initconfig.VenvPath + "/lib/python3.11/site-packages/" + name + "-" + version + ".dist-info/METADATA",
			Body: "Metadata-Version: 2.4\nName: " + name + "\nVersion: " + version + "\n" + headers + "\n\nbody\n"}
	}
	venv := []sbomtest.File{
		md("pip", "23.0.1", "License: MIT"),
		md("numpy", "1.26.4", "License-Expression: BSD-3-Clause AND 0BSD AND MIT AND Zlib AND CC0-1.0"),
		md("packaging", "24.2", "License-Expression: (Apache-2.0 OR BSD-2-Clause)"),
		md("odd", "1", "License-Expression: see the LICENSE file"),
		md("unbalanced", "1", "License-Expression: (MIT OR Apache-2.0"),
		md("multiline", "1", "License-Expression: GPL-2.0-only WITH\n Classpath-exception-2.0"),
	}
	l := &lock.Lock{Name: "x", Pip: []lock.Wheel{numpy}}
	inv, err := sbom.Read(context.Background(), image(t,
		[]sbomtest.File{osRel, {Path: status, Body: sbomtest.Status(debA)}}, venv, nil, []sbomtest.File{initF}), l)
	if err != nil {
		t.Fatalf("Read = %v", err)
	}
	got := map[string]string{}
	for _, p := range inv.Packages {
		got[p.Name] = p.License
	}
	want := map[string]string{"a": "", "imagectl-init": "", "pip": "", "odd": "", "unbalanced": "",
		"numpy":     "BSD-3-Clause AND 0BSD AND MIT AND Zlib AND CC0-1.0",
		"packaging": "(Apache-2.0 OR BSD-2-Clause)",
		"multiline": "GPL-2.0-only WITH Classpath-exception-2.0",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("licenses (-want +got):\n%s", diff)
	}
	for _, p := range inv.Packages {
		if p.Name == "numpy" && (p.Origin != sbom.OriginLock || p.SHA256 != numpy.SHA256) {
			t.Errorf("numpy = %+v, want the locked wheel (with its license)", p)
		}
	}
}

package scan_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"imagectl/internal/lock"
	"imagectl/internal/sbom"
	"imagectl/internal/sbom/sbomtest"
	"imagectl/internal/scan"
	"imagectl/internal/scan/scantest"
)

// torchWheels is the 30-wheel closure of torch 2.6.0+cu124 on Python 3.11
// (4.7 GB of wheels on the H200 run, docs/gpu-runs): what the scan of a real
// torch image reads from its SBOM.
var torchWheels = [][2]string{
	{"torch", "2.6.0+cu124"}, {"triton", "3.2.0"},
	{"nvidia-cuda-nvrtc-cu12", "12.4.127"}, {"nvidia-cuda-runtime-cu12", "12.4.127"}, {"nvidia-cuda-cupti-cu12", "12.4.127"},
	{"nvidia-cudnn-cu12", "9.1.0.70"}, {"nvidia-cublas-cu12", "12.4.5.8"}, {"nvidia-cufft-cu12", "11.2.1.3"},
	{"nvidia-curand-cu12", "10.3.5.147"}, {"nvidia-cusolver-cu12", "11.6.1.9"}, {"nvidia-cusparse-cu12", "12.3.1.170"},
	{"nvidia-cusparselt-cu12", "0.6.2"}, {"nvidia-nccl-cu12", "2.21.5"}, {"nvidia-nvtx-cu12", "12.4.127"},
	{"nvidia-nvjitlink-cu12", "12.4.127"}, {"filelock", "3.16.1"}, {"typing-extensions", "4.12.2"}, {"sympy", "1.13.1"},
	{"mpmath", "1.3.0"}, {"networkx", "3.4.2"}, {"jinja2", "3.1.5"}, {"markupsafe", "3.0.2"}, {"fsspec", "2024.12.0"},
	{"numpy", "2.2.2"}, {"pillow", "11.1.0"}, {"setuptools", "75.8.0"}, {"packaging", "24.2"}, {"pyyaml", "6.0.2"},
	{"requests", "2.32.3"}, {"urllib3", "2.3.0"},
}

func torchSBOM(b *testing.B) []byte {
	b.Helper()
	l := demoLock()
	l.Name = "pytorch-2.6-cu124-py3.11"
	l.Pip = nil
	for i, w := range torchWheels {
		l.Pip = append(l.Pip, lock.Wheel{Name: w[0], Version: w[1], Filename: fmt.Sprintf("%s-%s-py3-none-any.whl", strings.ReplaceAll(w[0], "-", "_"), w[1]),
			URL: "http://index/" + w[0] + ".whl", SHA256: fmt.Sprintf("%064x", i+1)})
	}
	img, err := sbomtest.Image(l)
	if err != nil {
		b.Fatal(err)
	}
	inv, err := sbom.Read(context.Background(), img, l)
	if err != nil {
		b.Fatal(err)
	}
	doc, err := sbom.CycloneDX(inv, demoRef, l)
	if err != nil {
		b.Fatal(err)
	}
	return doc
}

// BenchmarkScan: one scan of an SBOM against the fixture database (open
// excluded): the demo image, and the 30-wheel torch image. The scan reads
// the SBOM, never the image's 4.7 GB, so it takes well under a second.
func BenchmarkScan(b *testing.B) {
	dir, err := scantest.Build(b.TempDir(), time.Time{})
	if err != nil {
		b.Fatal(err)
	}
	db, err := scan.OpenDB(context.Background(), dir, scan.WithCacheDir(b.TempDir()))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	for _, c := range []struct {
		name string
		doc  []byte
	}{{"demo", demoSBOM(b)}, {"torch-30-wheels", torchSBOM(b)}} {
		b.Run(c.name, func(b *testing.B) {
			var n int
			for b.Loop() {
				r, err := scan.SBOM(context.Background(), c.doc, db)
				if err != nil {
					b.Fatal(err)
				}
				n = r.Packages
			}
			b.ReportMetric(float64(n), "packages")
		})
	}
}

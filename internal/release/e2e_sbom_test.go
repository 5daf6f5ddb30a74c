package release

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	spdxjson "github.com/spdx/tools-golang/json"

	"imagectl/internal/build"
	"imagectl/internal/lock"
	"imagectl/internal/sbom"
	"imagectl/internal/sign"
)

// checkSBOM reads the SPDX attestation of ref (signed by pub) with
// spdx/tools-golang's reader and checks that its Debian and Python
// packages are exactly what dpkg-query and pip list report inside the
// image, run with podman, and that each of l's debs and wheels (its pip
// too) carries the lock's sha256.
func checkSBOM(t *testing.T, ctx context.Context, ref name.Digest, pub string, l *lock.Lock) {
	t.Helper()
	preds, err := sign.VerifyAttestations(ctx, ref, sign.SPDXPredicateType, pub)
	if err != nil {
		t.Fatalf("VerifyAttestations(spdx) = %v", err)
	}
	doc, err := spdxjson.Read(bytes.NewReader(preds[0]))
	if err != nil {
		t.Fatalf("the SPDX attestation does not read as SPDX: %v", err)
	}
	lockSums := map[string]string{} // "deb:name:arch" or "pypi:name" -> sha256
	for _, d := range l.Apt {
		lockSums["deb:"+d.Name+":"+d.Arch] = d.SHA256
	}
	for _, w := range append(slices.Clone(l.Pip), l.Resolver) {
		lockSums["pypi:"+w.Name] = w.SHA256
	}
	var sbomDebs, sbomPy []string
	var inits int
	for _, p := range doc.Packages {
		sum := ""
		for _, c := range p.PackageChecksums {
			if c.Algorithm == "SHA256" {
				sum = c.Value
			}
		}
		purl := ""
		for _, r := range p.PackageExternalReferences {
			if r.RefType == "purl" {
				purl = r.Locator
			}
		}
		switch {
		case strings.HasPrefix(purl, "pkg:deb/"):
			arch := purl[strings.Index(purl, "arch=")+len("arch="):]
			arch, _, _ = strings.Cut(arch, "&")
			sbomDebs = append(sbomDebs, p.PackageName+":"+arch+"="+p.PackageVersion)
			if want, ok := lockSums["deb:"+p.PackageName+":"+arch]; ok && sum != want {
				t.Errorf("SBOM deb %s:%s has sha256 %q, the lock %s", p.PackageName, arch, sum, want)
			}
			delete(lockSums, "deb:"+p.PackageName+":"+arch)
		case strings.HasPrefix(purl, "pkg:pypi/"):
			sbomPy = append(sbomPy, p.PackageName+"="+p.PackageVersion)
			if want, ok := lockSums["pypi:"+p.PackageName]; ok && sum != want {
				t.Errorf("SBOM wheel %s has sha256 %q, the lock %s", p.PackageName, sum, want)
			}
			delete(lockSums, "pypi:"+p.PackageName)
		case strings.HasPrefix(purl, "pkg:generic/imagectl-init"):
			inits++
		}
	}

	script := `set -e
dpkg-query -W -f '${db:Status-Status} ${Package}:${Architecture}=${Version}\n' > /tmp/dpkg
grep '^installed ' /tmp/dpkg | cut -d' ' -f2
echo ---
if [ -x ` + build.VenvPath + `/bin/pip ]; then ` + build.VenvPath + `/bin/python -m pip list --format json
else python3 -m pip --python ` + build.VenvPath + `/bin/python list --format json; fi`
	args := []string{"run", "--rm", "--network=none", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"}
	if strings.HasPrefix(ref.RegistryStr(), "127.0.0.1:") || strings.HasPrefix(ref.RegistryStr(), "localhost:") {
		args = append(args, "--tls-verify=false")
	}
	out, err := exec.CommandContext(ctx, "podman", append(args, ref.String(), "/bin/sh", "-c", script)...).Output()
	if err != nil {
		t.Fatalf("podman run %s: %v\n%s", ref, err, out)
	}
	dpkgOut, pipOut, ok := strings.Cut(string(out), "---\n")
	if !ok {
		t.Fatalf("podman run output lacks the separator:\n%s", out)
	}
	imageDebs := strings.Fields(dpkgOut)
	var pipList []struct{ Name, Version string }
	if err := json.Unmarshal([]byte(pipOut), &pipList); err != nil {
		t.Fatalf("pip list: %v\n%s", err, pipOut)
	}
	var imagePy []string
	for _, p := range pipList {
		imagePy = append(imagePy, sbom.Normalize(p.Name)+"="+p.Version)
	}
	for _, s := range [][]string{sbomDebs, sbomPy, imageDebs, imagePy} {
		slices.Sort(s)
	}
	t.Logf("SBOM of %s: %d packages (%d debs, %d Python %v, %d init); the image: %d debs (dpkg-query -W), %d Python (pip list)",
		ref, len(doc.Packages), len(sbomDebs), len(sbomPy), sbomPy, inits, len(imageDebs), len(imagePy))
	if !slices.Equal(sbomDebs, imageDebs) {
		t.Errorf("SBOM debs differ from dpkg-query -W in the image:\nSBOM:  %v\nimage: %v", sbomDebs, imageDebs)
	}
	if !slices.Equal(sbomPy, imagePy) {
		t.Errorf("SBOM Python packages differ from pip list in the image:\nSBOM:  %v\nimage: %v", sbomPy, imagePy)
	}
	if len(lockSums) != 0 {
		t.Errorf("locked artifacts missing from the SBOM: %v", lockSums)
	}
	if inits != 1 {
		t.Errorf("SBOM lists %d init packages, want 1", inits)
	}
}

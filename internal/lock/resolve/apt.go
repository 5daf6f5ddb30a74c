package resolve

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"imagectl/internal/auth"
	"imagectl/internal/lock"
	"imagectl/internal/pep"
)

// aptArg is what a spec's apt entry may be: a Debian package name with an
// optional "=version" (Debian policy 5.6.1 and 5.6.12).
var aptArg = regexp.MustCompile(`^[a-z0-9][a-z0-9+.-]+(:[a-z0-9-]+)?(=[A-Za-z0-9.+~:-]+)?$`)

// AptError reports that apt could not resolve the spec's packages; Output
// is apt's own explanation.
type AptError struct {
	Packages []string
	Output   string
}

func (e *AptError) Error() string {
	return fmt.Sprintf("apt could not resolve %s:\n%s", strings.Join(e.Packages, " "), strings.TrimSpace(e.Output))
}

// aptScript looks for the spec's Python in the base and, only when apt has
// something to answer (the spec names apt packages, or the base lacks
// python3.X), updates the package lists from the base's own sources, looks
// whether they offer that Python (pythonScript: its packages join the list)
// and asks apt for the URIs of everything `apt-get install` would fetch: the
// closure beyond what the base already has. A base that has the Python, with
// no apt packages asked, is not updated at all: `apt-get update` costs a
// round of the base's mirrors, and where those are unreachable (a GPU
// machine without network, an air-gapped builder) it waits for apt's
// timeouts: 250 s on the GPU machine's run3 and run4.
func aptScript(pkgs []string, python string) (string, error) {
	for _, p := range pkgs {
		if !aptArg.MatchString(p) {
			return "", fmt.Errorf("apt package %q is not a Debian package name (name or name=version)", p)
		}
	}
	if !pythonMinor.MatchString(python) {
		return "", fmt.Errorf("python %q is not MAJOR.MINOR (e.g. 3.11)", python)
	}
	// An empty archive cache: apt prints the URI of every archive it would
	// fetch, and one already cached in the base would be left out.
	// Acquire::ForceHash: without it apt prints the first hash the Packages
	// file lists, which is MD5Sum for some packages.
	return `set -u
mkdir -p /tmp/imagectl-apt/partial
: >/out/apt.txt
: >/out/apt.log
rc=0
set -- ` + strings.Join(pkgs, " ") + `
` + pythonScript(python) + `if [ $# -gt 0 ] || [ -z "$havepy" ]; then
  apt-get update -qq >/out/apt.log 2>&1 || rc=$?
  if [ $rc -eq 0 ]; then
    if [ -z "$havepy" ]; then pyoffers; fi
    set -- "$@" $extra
    if [ $# -gt 0 ]; then
      apt-get install -y --no-install-recommends --print-uris -qq \
        -o Acquire::ForceHash=SHA256 -o Dir::Cache::Archives=/tmp/imagectl-apt "$@" >/out/apt.txt 2>>/out/apt.log || rc=$?
    fi
  fi
fi
printf '%s\n' "$extra" >/out/python.install
echo $rc >/out/apt.rc
`, nil
}

// resolveApt resolves pkgs and, with them, the spec's Python (python3.X and
// python3.X-venv from the base's repositories when the base lacks it).
func resolveApt(ctx context.Context, r Runner, image string, pkgs []string, python string) ([]lock.Deb, pythonProbe, error) {
	script, err := aptScript(pkgs, python)
	if err != nil {
		return nil, pythonProbe{}, err
	}
	files, err := r.Run(ctx, Job{Name: "apt resolve", Image: image, Script: script})
	if err != nil {
		return nil, pythonProbe{}, err
	}
	probe := parsePythonProbe(files)
	if rc := strings.TrimSpace(string(files["apt.rc"])); rc != "0" {
		// Redacted as pip's is: a sources.list or auth.conf URL with
		// user:password@ must not reach an error or a log.
		return nil, probe, &AptError{Packages: append(append([]string{}, pkgs...), probe.install...), Output: auth.Redact(string(files["apt.log"]) + string(files["apt.txt"]))}
	}
	debs, err := parsePrintURIs(files["apt.txt"])
	if err != nil {
		return nil, probe, fmt.Errorf("reading apt's answer: %w", err)
	}
	return debs, probe, nil
}

// parsePrintURIs reads `apt-get install --print-uris` output, one line per
// archive:
//
//	'http://mirror/debian/pool/main/j/jq/jq_1.6-2.1_amd64.deb' jq_1.6-2.1_amd64.deb 64208 SHA256:5f8b...
//
// The second field is apt's own archive name, name_version_arch.deb with
// ':' and '_' escaped as %3a and %5f, so the epoch survives.
func parsePrintURIs(b []byte) ([]lock.Deb, error) {
	var debs []lock.Deb
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 4 || !strings.HasPrefix(f[0], "'") || !strings.HasSuffix(f[0], "'") {
			return nil, fmt.Errorf("line %d: want 'URL' FILE SIZE HASH, got %q", n, line)
		}
		u := strings.Trim(f[0], "'")
		if pu, err := url.Parse(u); err != nil || pu.Scheme == "" || pu.Host == "" {
			return nil, fmt.Errorf("line %d: %q is not a URL", n, u)
		}
		size, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || size <= 0 {
			return nil, fmt.Errorf("line %d: size %q is not a positive integer", n, f[2])
		}
		algo, sum, ok := strings.Cut(f[3], ":")
		if !ok || !strings.EqualFold(algo, "SHA256") || !pep.IsSHA256(sum) {
			return nil, fmt.Errorf("line %d: %s has no SHA256 (got %q)", n, f[1], f[3])
		}
		name, version, arch, err := splitDebName(f[1])
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		debs = append(debs, lock.Deb{Name: name, Version: version, Arch: arch, URL: u, SHA256: strings.ToLower(sum), Size: size})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if debs == nil {
		debs = []lock.Deb{}
	}
	return debs, nil
}

func splitDebName(file string) (name, version, arch string, err error) {
	base, ok := strings.CutSuffix(file, ".deb")
	parts := strings.Split(base, "_")
	if !ok || len(parts) != 3 {
		return "", "", "", fmt.Errorf("archive name %q is not name_version_arch.deb", file)
	}
	for i, p := range parts {
		v, uerr := url.PathUnescape(p)
		if uerr != nil || v == "" {
			return "", "", "", fmt.Errorf("archive name %q: bad field %q", file, p)
		}
		parts[i] = v
	}
	return parts[0], parts[1], parts[2], nil
}

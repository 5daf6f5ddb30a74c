package resolve

import (
	"fmt"
	"regexp"
	"strings"
)

// pythonMinor is what a spec's python must be: MAJOR.MINOR.
var pythonMinor = regexp.MustCompile(`^[0-9]+\.[0-9]+$`)

// PythonError reports a base that cannot provide the spec's Python: it has
// no python3.X and its apt repositories offer none.
type PythonError struct {
	Image, Base string
	// Want is the spec's python, e.g. "3.10".
	Want string
	// Offered are the python3.N packages the base's repositories offer.
	Offered []string
}

func (e *PythonError) Error() string {
	offers := "no python3.N package"
	if len(e.Offered) > 0 {
		offers = strings.Join(e.Offered, ", ")
	}
	return fmt.Sprintf("image %s: base %s has no python%s and its apt repositories offer %s; the spec asks python %s", e.Image, e.Base, e.Want, offers, e.Want)
}

// pythonProbe is what the apt step found out about the spec's Python.
type pythonProbe struct {
	path    string   // the interpreter in the base, "" when absent
	install []string // the packages that provide it, when the base lacks it
	offered []string // python3.N packages the repositories offer
}

// pythonPackages are the Debian/Ubuntu packages of interpreter python3.X
// and its venv module.
func pythonPackages(minor string) []string {
	return []string{"python" + minor, "python" + minor + "-venv"}
}

// pythonScript is the apt step's prologue: is python3.X in the base
// ($havepy, and its path in python.path)? It defines pyoffers, which the
// step runs after apt-get update when the base lacks it: do the base's
// repositories offer it (then its packages are $extra, joining the list),
// and which python3.N do they offer (for the error)?
func pythonScript(minor string) string {
	py := "python" + minor
	return `extra=
havepy=
if command -v ` + py + ` >/out/python.path 2>/dev/null; then havepy=1; else : >/out/python.path; fi
pyoffers() {
  apt-cache pkgnames python3. 2>/dev/null | grep -E '^python3\.[0-9]+$' | sort -V >/out/python.offers
  if grep -qx '` + py + `' /out/python.offers; then extra='` + strings.Join(pythonPackages(minor), " ") + `'; fi
}
`
}

func parsePythonProbe(files map[string][]byte) pythonProbe {
	var p pythonProbe
	p.path = strings.TrimSpace(string(files["python.path"]))
	p.install = strings.Fields(string(files["python.install"]))
	p.offered = strings.Fields(string(files["python.offers"]))
	return p
}

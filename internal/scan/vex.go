package scan

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/openvex/go-vex/pkg/vex"
	"github.com/package-url/packageurl-go"

	"imagectl/internal/lock"
	"imagectl/internal/pep"
)

// VEXFile is an image's OpenVEX document, images/NAME/vex.json.
const VEXFile = "vex.json"

// VEXSource is one OpenVEX document and the file it came from.
type VEXSource struct {
	Path string
	Doc  *vex.VEX
}

// LoadVEX reads the OpenVEX document at path and checks every statement:
// the OpenVEX rules (go-vex's Validate), a product on each, and a
// justification on each not_affected statement.
func LoadVEX(path string) (VEXSource, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return VEXSource{}, err
	}
	doc, err := vex.Parse(b)
	if err != nil {
		return VEXSource{}, fmt.Errorf("%s: not an OpenVEX document: %w", path, err)
	}
	var errs []error
	for i := range doc.Statements {
		s := &doc.Statements[i]
		where := fmt.Sprintf("%s: statement %d (%s)", path, i+1, s.Vulnerability.Name)
		if err := s.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
			continue
		}
		if len(s.Products) == 0 {
			errs = append(errs, fmt.Errorf("%s: no products: name the image by its package URL (pkg:oci/NAME)", where))
		}
		if s.Status == vex.StatusNotAffected && s.Justification == "" {
			errs = append(errs, fmt.Errorf("%s: not_affected needs a justification (%s)", where, strings.Join(justifications(), ", ")))
		}
	}
	if len(doc.Statements) == 0 {
		errs = append(errs, fmt.Errorf("%s: no statements", path))
	}
	if err := errors.Join(errs...); err != nil {
		return VEXSource{}, err
	}
	return VEXSource{Path: path, Doc: doc}, nil
}

func justifications() []string {
	var out []string
	for _, j := range []vex.Justification{vex.ComponentNotPresent, vex.VulnerableCodeNotPresent, vex.VulnerableCodeNotInExecutePath, vex.VulnerableCodeCannotBeControlledByAdversary, vex.InlineMitigationsAlreadyExist} {
		out = append(out, string(j))
	}
	return out
}

// statementFor is the latest statement of src about finding f of the
// image product, or nil.
func statementFor(src VEXSource, product string, f Finding) *vex.Statement {
	var best *vex.Statement
	for _, id := range f.Names() {
		ms := src.Doc.Matches(id, product, []string{f.PURL})
		if len(ms) > 0 {
			s := ms[len(ms)-1]
			best = &s
		}
	}
	return best
}

// applyVEX marks the findings that a not_affected or fixed statement
// covers as suppressed.
func applyVEX(r *Result, srcs []VEXSource) error {
	if len(srcs) == 0 {
		return nil
	}
	if r.Product == "" {
		return errors.New("VEX: the SBOM names no image package URL (metadata.component.purl) to match statements against")
	}
	for i := range r.Findings {
		f := &r.Findings[i]
		for _, src := range srcs {
			s := statementFor(src, r.Product, *f)
			if s == nil || (s.Status != vex.StatusNotAffected && s.Status != vex.StatusFixed) {
				continue
			}
			f.Suppressed = &Suppression{Document: src.Path, Status: string(s.Status), Justification: string(s.Justification), Impact: s.ImpactStatement}
		}
	}
	return nil
}

// UnusedStatements lists the statements of srcs that cover none of r's
// findings: a VEX statement that matches nothing is a no-op that hides
// a typo (wrong CVE, wrong purl), so it is reported.
func UnusedStatements(r *Result, srcs []VEXSource) []string {
	var out []string
	for _, src := range srcs {
		for i, s := range src.Doc.Statements {
			used := false
			for _, f := range r.Findings {
				for _, id := range f.Names() {
					if s.Matches(id, r.Product, []string{f.PURL}) {
						used = true
					}
				}
			}
			if !used {
				out = append(out, fmt.Sprintf("%s: statement %d (%s) matches no finding of %s", src.Path, i+1, s.Vulnerability.Name, r.Product))
			}
		}
	}
	return out
}

// LintVEX checks the OpenVEX document at path for the image named image:
// LoadVEX's rules, and that each statement matches something: one of its
// products must be the image (pkg:oci/NAME), and a pkg:pypi subcomponent
// must be a Python package of the lock (its wheels and pip), when l is
// given. A statement that matches nothing is a silent no-op that hides a
// typo; each is an error naming the file and the statement.
func LintVEX(path, image string, l *lock.Lock) error {
	src, err := LoadVEX(path)
	if err != nil {
		return err
	}
	product := packageurl.NewPackageURL(packageurl.TypeOCI, "", image, "sha256:"+strings.Repeat("0", 64), nil, "").ToString()
	var pypi []string
	if l != nil {
		for _, w := range append([]lock.Wheel{l.Resolver}, l.Pip...) {
			if w.Name != "" {
				pypi = append(pypi, packageurl.NewPackageURL(packageurl.TypePyPi, "", pep.Normalize(w.Name), w.Version, nil, "").ToString())
			}
		}
	}
	var errs []error
	for i, s := range src.Doc.Statements {
		where := fmt.Sprintf("%s: statement %d (%s)", path, i+1, s.Vulnerability.Name)
		matched := false
		for _, p := range s.Products {
			if !p.Component.Matches(product) {
				continue
			}
			matched = true
			for _, sc := range p.Subcomponents {
				if !strings.HasPrefix(sc.ID, "pkg:pypi/") || l == nil {
					continue
				}
				found := false
				for _, q := range pypi {
					if sc.Matches(q) {
						found = true
					}
				}
				if !found {
					errs = append(errs, fmt.Errorf("%s: subcomponent %s is no Python package of image %s's lock", where, sc.ID, image))
				}
			}
		}
		if !matched {
			errs = append(errs, fmt.Errorf("%s: no product matches image %s (want pkg:oci/%s)", where, image, image))
		}
	}
	return errors.Join(errs...)
}

package verify

import (
	"fmt"
	"slices"
	"strings"

	"imagectl/internal/lock"
)

// pipGuardOut is the pip_guard part of probes/env.py's output: what
// PIP_CONSTRAINT pins and three dry runs of pip against local stand-in
// wheels (no index): another version of a pinned project (Tried) with the
// constraints and without them, and a new project with them.
type pipGuardOut struct {
	Constraint string   `json:"constraint"`
	Pins       []string `json:"pins"`
	Error      string   `json:"error"`
	Tried      string   `json:"tried"`
	// Refused and Refusal: the dry run of Tried under the constraints
	// failed, and pip's first error line.
	Refused bool   `json:"refused"`
	Refusal string `json:"refusal"`
	// UnconstrainedOK: without PIP_CONSTRAINT the same dry run would
	// install Tried, so the refusal is the constraints', not a broken pip.
	UnconstrainedOK bool   `json:"unconstrained_ok"`
	Unconstrained   string `json:"unconstrained"`
	// NewOK: a project the lock does not hold still installs.
	NewOK bool   `json:"new_ok"`
	New   string `json:"new"`
}

// pipGuardCheck checks that the image pins its whole locked wheel closure
// for pip (the build's ConstraintPath through PIP_CONSTRAINT) and that pip, in
// the image, refuses to move a locked version and still adds a new project.
func pipGuardCheck(wheels []lock.Wheel, g pipGuardOut) Check {
	c := Check{Name: "pip.constraints", Threshold: fmt.Sprintf("the lock's %d wheels pinned; a locked version cannot move", len(wheels)), Status: Pass}
	if len(wheels) == 0 {
		c.Status, c.Threshold, c.Detail = Skip, "", "the lock has no pip wheels"
		return c
	}
	var want []string
	for _, w := range wheels {
		want = append(want, w.Name+"=="+w.Version)
	}
	slices.Sort(want)
	have := slices.Sorted(slices.Values(g.Pins))
	c.Value = fmt.Sprintf("%d pins", len(have))
	switch {
	case g.Constraint == "":
		c.Status, c.Value = Fail, "no PIP_CONSTRAINT"
		c.Detail = "the image sets no PIP_CONSTRAINT, so pip install inside it can replace torch or an nvidia-* wheel of the lock"
	case g.Error != "":
		c.Status, c.Detail = Fail, "reading "+g.Constraint+": "+g.Error
	case !slices.Equal(have, want):
		c.Status = Fail
		c.Detail = fmt.Sprintf("%s pins %s; the lock's closure is %s", g.Constraint, diffPins(have, want), limitJoin(want, 10))
	case !g.Refused:
		c.Status = Fail
		c.Detail = fmt.Sprintf("pip install --dry-run %s was not refused under %s: %s", g.Tried, g.Constraint, g.Refusal)
	case !g.UnconstrainedOK:
		c.Status = Fail
		c.Detail = fmt.Sprintf("pip install --dry-run %s fails even without the constraints, so the guard is not what refused it: %s", g.Tried, g.Unconstrained)
	case !g.NewOK:
		c.Status = Fail
		c.Detail = "a project the lock does not hold was refused: " + g.New
	default:
		c.Detail = fmt.Sprintf("%s: pip install %s refused (%s); a new project accepted", g.Constraint, g.Tried, g.Refusal)
	}
	return c
}

// diffPins names what have lacks and adds against want.
func diffPins(have, want []string) string {
	var d []string
	for _, w := range want {
		if !slices.Contains(have, w) {
			d = append(d, "no "+w)
		}
	}
	for _, h := range have {
		if !slices.Contains(want, h) {
			d = append(d, "extra "+h)
		}
	}
	return strings.Join(d, ", ")
}

package spec

import (
	"fmt"
	"math"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"imagectl/internal/initconfig"
)

// eval evaluates one attribute and converts it to at's kind. It returns
// (nil, true) for null (unset) and (nil, false) after an error.
func (l *loader) eval(ctx *hcl.EvalContext, a *hcl.Attribute, at attr) (any, bool) {
	if !l.declared(ctx, a.Expr) {
		return nil, false
	}
	v, d := a.Expr.Value(ctx)
	l.diags = append(l.diags, d...)
	if d.HasErrors() {
		return nil, false
	}
	if !v.IsWhollyKnown() {
		return nil, false // an earlier error (a failed variable) made it unknown
	}
	if v.IsNull() {
		return nil, true
	}
	fail := func(summary, format string, args ...any) (any, bool) {
		l.diags = append(l.diags, &hcl.Diagnostic{
			Severity:    hcl.DiagError,
			Summary:     summary,
			Detail:      fmt.Sprintf(format, args...),
			Subject:     a.Expr.Range().Ptr(),
			Context:     a.Range.Ptr(),
			Expression:  a.Expr,
			EvalContext: ctx,
		})
		return nil, false
	}
	wrongType := func(err error) (any, bool) {
		return fail("Incorrect attribute value type", "%s must be a %s: %v.", a.Name, at.kind, err)
	}
	checkString := func(s string) error {
		if at.check == nil {
			return nil
		}
		return at.check(s)
	}
	if at.noNumber {
		if v.Type() == cty.Number {
			return fail("Number where a string is meant", "%s = %s is a number, read as %q: write it as a string, %s = \"...\" (python = 3.10 would become \"3.1\").", a.Name, v.AsBigFloat().Text('g', -1), v.AsBigFloat().Text('g', -1), a.Name)
		}
		if ty := v.Type(); ty.IsTupleType() || ty.IsListType() {
			i := 0
			for it := v.ElementIterator(); it.Next(); i++ {
				if _, e := it.Element(); e.Type() == cty.Number {
					return fail("Number where a string is meant", "%s element %d is the number %s: write it as a string.", a.Name, i, e.AsBigFloat().Text('g', -1))
				}
			}
		}
	}
	switch at.kind {
	case kString:
		sv, err := convert.Convert(v, cty.String)
		if err != nil {
			return wrongType(err)
		}
		s := sv.AsString()
		if err := checkString(s); err != nil {
			return fail("Invalid value for "+a.Name, "%s.", capitalize(err.Error()))
		}
		return s, true
	case kStrings:
		lv, err := convert.Convert(v, cty.List(cty.String))
		if err != nil {
			return wrongType(err)
		}
		out := []string{}
		for it := lv.ElementIterator(); it.Next(); {
			_, e := it.Element()
			if e.IsNull() {
				return fail("Invalid value for "+a.Name, "%s must not contain null.", a.Name)
			}
			if err := checkString(e.AsString()); err != nil {
				return fail("Invalid value for "+a.Name, "Element %d: %v.", len(out), err)
			}
			out = append(out, e.AsString())
		}
		return out, true
	case kStringMap:
		mv, err := convert.Convert(v, cty.Map(cty.String))
		if err != nil {
			return wrongType(err)
		}
		out := map[string]string{}
		for it := mv.ElementIterator(); it.Next(); {
			k, e := it.Element()
			if e.IsNull() {
				return fail("Invalid value for "+a.Name, "%s[%q] must not be null.", a.Name, k.AsString())
			}
			if k.AsString() == "" {
				return fail("Invalid value for "+a.Name, "%s has an empty key.", a.Name)
			}
			out[k.AsString()] = e.AsString()
		}
		return out, true
	case kBool:
		bv, err := convert.Convert(v, cty.Bool)
		if err != nil {
			return wrongType(err)
		}
		return bv.True(), true
	case kInt:
		nv, err := convert.Convert(v, cty.Number)
		if err != nil {
			return wrongType(err)
		}
		bf := nv.AsBigFloat()
		if !bf.IsInt() {
			return fail("Invalid value for "+a.Name, "%s must be a whole number, not %s.", a.Name, bf.Text('g', -1))
		}
		n, acc := bf.Int64()
		if acc != 0 || n < at.min || (at.max > 0 && n > at.max) {
			if at.max > 0 {
				return fail("Invalid value for "+a.Name, "%s must be between %d and %d, not %s.", a.Name, at.min, at.max, bf.Text('g', -1))
			}
			return fail("Invalid value for "+a.Name, "%s must be at least %d, not %s.", a.Name, at.min, bf.Text('g', -1))
		}
		return n, true
	case kNumber:
		nv, err := convert.Convert(v, cty.Number)
		if err != nil {
			return wrongType(err)
		}
		f, _ := nv.AsBigFloat().Float64()
		if f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
			return fail("Invalid value for "+a.Name, "%s must be a finite number >= 0, not %s.", a.Name, nv.AsBigFloat().Text('g', -1))
		}
		return f, true
	case kSize:
		if v.Type() == cty.Number {
			bf := v.AsBigFloat()
			n, acc := bf.Int64()
			if !bf.IsInt() || acc != 0 || n < 0 {
				return fail("Invalid size", "%s must be a whole, non-negative number of bytes or a string such as \"1GiB\", not %s.", a.Name, bf.Text('g', -1))
			}
			return n, true
		}
		sv, err := convert.Convert(v, cty.String)
		if err != nil {
			return wrongType(err)
		}
		n, err := ParseSize(sv.AsString())
		if err != nil {
			return fail("Invalid size", "%s: %s.", a.Name, err)
		}
		return n, true
	case kDuration:
		sv, err := convert.Convert(v, cty.String)
		if err != nil {
			return wrongType(err)
		}
		dur, err := ParseDuration(sv.AsString())
		if err != nil {
			return fail("Invalid duration", "%s: %s.", a.Name, err)
		}
		return initconfig.Duration(dur), true
	}
	return fail("Internal error", "attribute %s has no decoder", a.Name)
}

// declared reports whether every var.NAME that expr uses is declared,
// adding an "Undeclared variable" error at each one that is not (hcl
// alone says the object has no such attribute).
func (l *loader) declared(ctx *hcl.EvalContext, expr hcl.Expression) bool {
	var vars cty.Value
	found := false
	for c := ctx; c != nil && !found; c = c.Parent() {
		vars, found = c.Variables["var"]
	}
	if !found || !vars.Type().IsObjectType() {
		return true
	}
	ok := true
	for _, tr := range expr.Variables() {
		if tr.RootName() != "var" || len(tr) < 2 {
			continue
		}
		at, isAttr := tr[1].(hcl.TraverseAttr)
		if !isAttr || vars.Type().HasAttribute(at.Name) {
			continue
		}
		l.errorf(tr.SourceRange(), "Undeclared variable", "var.%s is not declared: add a variable %q { default = ... } block to the spec, or correct the name.", at.Name, at.Name)
		ok = false
	}
	return ok
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

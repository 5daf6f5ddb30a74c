package spec

import (
	"fmt"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// maxCombinations bounds the images one matrix may produce.
const maxCombinations = 1000

// evalMatrix evaluates a matrix attribute into its sorted keys and every
// combination, the first key varying slowest.
func (l *loader) evalMatrix(ctx *hcl.EvalContext, a *hcl.Attribute) ([]string, []map[string]cty.Value, bool) {
	v, d := a.Expr.Value(ctx)
	l.diags = append(l.diags, d...)
	if d.HasErrors() || !v.IsWhollyKnown() {
		return nil, nil, false
	}
	bad := func(format string, args ...any) ([]string, []map[string]cty.Value, bool) {
		l.diags = append(l.diags, &hcl.Diagnostic{
			Severity: hcl.DiagError, Summary: "Invalid matrix", Detail: fmt.Sprintf(format, args...),
			Subject: a.Expr.Range().Ptr(), Context: a.Range.Ptr(),
		})
		return nil, nil, false
	}
	if v.IsNull() || !(v.Type().IsObjectType() || v.Type().IsMapType()) {
		return bad(`A matrix is an object of lists, e.g. { cuda = ["11.8", "12.1"] }.`)
	}
	if v.LengthInt() == 0 {
		return bad("The matrix is empty: give it at least one key with at least one value, or remove it.")
	}
	vals := map[string][]cty.Value{}
	var keys []string
	total := 1
	for it := v.ElementIterator(); it.Next(); {
		k, list := it.Element()
		key := k.AsString()
		if !hclsyntax.ValidIdentifier(key) || key == "var" {
			return bad("Matrix key %q is not usable as a variable name.", key)
		}
		if list.IsNull() || !(list.Type().IsListType() || list.Type().IsTupleType() || list.Type().IsSetType()) {
			return bad("Matrix key %q must be a list of values.", key)
		}
		if list.LengthInt() == 0 {
			return bad("Matrix key %q has no values.", key)
		}
		seen := map[string]bool{}
		for e := list.ElementIterator(); e.Next(); {
			_, ev := e.Element()
			if ev.Type() == cty.Number && versionKey(key) {
				return bad("Matrix key %q lists the number %s where a version string is meant (3.10 would become \"3.1\"): quote every value, %s = [\"3.10\", ...].", key, ev.AsBigFloat().Text('g', -1), key)
			}
			sv, err := convert.Convert(ev, cty.String)
			if err != nil || sv.IsNull() {
				return bad("Matrix key %q has a value that is not a string, number or bool.", key)
			}
			if seen[sv.AsString()] {
				return bad("Matrix key %q lists %q twice.", key, sv.AsString())
			}
			seen[sv.AsString()] = true
			vals[key] = append(vals[key], sv)
		}
		keys = append(keys, key)
		total *= len(vals[key])
		if total > maxCombinations {
			return bad("The matrix produces more than %d images.", maxCombinations)
		}
	}
	sort.Strings(keys)
	combos := []map[string]cty.Value{{}}
	for _, k := range keys {
		var next []map[string]cty.Value
		for _, c := range combos {
			for _, v := range vals[k] {
				m := make(map[string]cty.Value, len(c)+1)
				for ck, cv := range c {
					m[ck] = cv
				}
				m[k] = v
				next = append(next, m)
			}
		}
		combos = next
	}
	return keys, combos, true
}

// versionKey reports whether a matrix key is named after an attribute
// that takes a version or a package (python, cuda, ...): a number there
// loses its trailing zeros.
func versionKey(key string) bool {
	for _, a := range imageBlock.attrs {
		if a.name == key && a.noNumber {
			return true
		}
	}
	return false
}

package spec

import (
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// notInherited are the attributes an image does not take from its parents.
var notInherited = map[string]bool{"name": true, "matrix": true, "inherits": true}

// inherited returns the attributes image label takes from the images its
// inherits attribute names, in order (later parents win), recursively.
func (l *loader) inherited(ctx *hcl.EvalContext, label string, own collected, owns map[string]collected, chain []string) (collected, bool) {
	if r, ok := l.inheritMemo[label]; ok {
		return r.attrs, r.ok
	}
	out, ok := l.inheritedUncached(ctx, label, own, owns, chain)
	l.inheritMemo[label] = inheritResult{out, ok}
	return out, ok
}

type inheritResult struct {
	attrs collected
	ok    bool
}

func (l *loader) inheritedUncached(ctx *hcl.EvalContext, label string, own collected, owns map[string]collected, chain []string) (collected, bool) {
	out := collected{}
	as := own["inherits"]
	if len(as) == 0 {
		return out, true
	}
	a := as[len(as)-1]
	v, ok := l.eval(ctx, a, attr{name: "inherits", kind: kStrings})
	if !ok {
		return nil, false
	}
	if v == nil {
		return out, true
	}
	chain = append(chain, label)
	for _, parent := range v.([]string) {
		for _, c := range chain {
			if c == parent {
				l.errorf(a.Expr.Range(), "Inheritance cycle", "The images inherit in a loop: %s -> %s.", strings.Join(chain, " -> "), parent)
				return nil, false
			}
		}
		pown, ok := owns[parent]
		if !ok {
			var names []string
			for n := range owns {
				names = append(names, n)
			}
			sort.Strings(names)
			l.errorf(a.Expr.Range(), "Unknown parent image", "Image %q inherits from %q, but this file has no image block labelled %q (it has %s).", label, parent, parent, strings.Join(quoteAll(names), ", "))
			return nil, false
		}
		grand, ok := l.inherited(ctx, parent, pown, owns, chain)
		if !ok {
			return nil, false
		}
		for k, v := range merge(grand, pown) {
			if !notInherited[k] {
				out[k] = lastOccurrences(append(out[k], v...))
			}
		}
	}
	return out, true
}

// lastOccurrences drops all but the last occurrence of each attribute, so
// that a diamond or a repeated parent neither changes who wins nor makes
// the lists grow with every level.
func lastOccurrences(as []*hcl.Attribute) []*hcl.Attribute {
	seen := map[*hcl.Attribute]bool{}
	out := make([]*hcl.Attribute, 0, len(as))
	for i := len(as) - 1; i >= 0; i-- {
		if !seen[as[i]] {
			seen[as[i]] = true
			out = append(out, as[i])
		}
	}
	slices.Reverse(out)
	return out
}

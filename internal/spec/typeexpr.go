package spec

import (
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/zclconf/go-cty/cty"
)

func typeexprConstraint(expr hcl.Expression) (cty.Type, hcl.Diagnostics) {
	return typeexpr.TypeConstraint(expr)
}

func sortStrings(s []string) { sort.Strings(s) }

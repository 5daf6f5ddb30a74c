package spec

import (
	"errors"
	"regexp"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// functions are the HCL functions specs may call: go-cty's stdlib, under
// the names Terraform and docker buildx bake use.
var functions = map[string]function.Function{
	"abs":           stdlib.AbsoluteFunc,
	"ceil":          stdlib.CeilFunc,
	"chomp":         stdlib.ChompFunc,
	"coalesce":      stdlib.CoalesceFunc,
	"coalescelist":  stdlib.CoalesceListFunc,
	"compact":       stdlib.CompactFunc,
	"concat":        stdlib.ConcatFunc,
	"contains":      stdlib.ContainsFunc,
	"distinct":      stdlib.DistinctFunc,
	"element":       stdlib.ElementFunc,
	"flatten":       stdlib.FlattenFunc,
	"floor":         stdlib.FloorFunc,
	"format":        limitWidth(stdlib.FormatFunc),
	"formatlist":    limitWidth(stdlib.FormatListFunc),
	"join":          stdlib.JoinFunc,
	"jsonencode":    stdlib.JSONEncodeFunc,
	"keys":          stdlib.KeysFunc,
	"length":        stdlib.LengthFunc,
	"lookup":        stdlib.LookupFunc,
	"lower":         stdlib.LowerFunc,
	"max":           stdlib.MaxFunc,
	"merge":         stdlib.MergeFunc,
	"min":           stdlib.MinFunc,
	"regex_replace": stdlib.RegexReplaceFunc,
	"replace":       stdlib.ReplaceFunc,
	"reverse":       stdlib.ReverseListFunc,
	"setunion":      stdlib.SetUnionFunc,
	"slice":         stdlib.SliceFunc,
	"sort":          stdlib.SortFunc,
	"split":         stdlib.SplitFunc,
	"strlen":        stdlib.StrlenFunc,
	"substr":        stdlib.SubstrFunc,
	"title":         stdlib.TitleFunc,
	"trim":          stdlib.TrimFunc,
	"trimprefix":    stdlib.TrimPrefixFunc,
	"trimspace":     stdlib.TrimSpaceFunc,
	"trimsuffix":    stdlib.TrimSuffixFunc,
	"upper":         stdlib.UpperFunc,
	"values":        stdlib.ValuesFunc,
	"zipmap":        stdlib.ZipmapFunc,
}

// FunctionNames lists the functions specs may call, sorted.
func FunctionNames() []string {
	var ns []string
	for n := range functions {
		ns = append(ns, n)
	}
	sortStrings(ns)
	return ns
}

// wideRE matches a format verb with a width or precision of five digits or
// more.
var wideRE = regexp.MustCompile(`%[^a-zA-Z%]*[0-9]{5,}`)

// limitWidth wraps format and formatlist so that a spec cannot ask for a
// gigabyte of padding ("%999999999d").
func limitWidth(f function.Function) function.Function {
	return function.New(&function.Spec{
		Description: f.Description(),
		Params:      f.Params(),
		VarParam:    f.VarParam(),
		Type: func(args []cty.Value) (cty.Type, error) {
			return f.ReturnTypeForValues(args)
		},
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			if len(args) > 0 && args[0].IsKnown() && !args[0].IsNull() && args[0].Type() == cty.String && wideRE.MatchString(args[0].AsString()) {
				return cty.NilVal, errors.New("format widths and precisions above 9999 are not supported")
			}
			return f.Call(args)
		},
	})
}

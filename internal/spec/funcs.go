package spec

import (
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
	"format":        stdlib.FormatFunc,
	"formatlist":    stdlib.FormatListFunc,
	"indent":        stdlib.IndentFunc,
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

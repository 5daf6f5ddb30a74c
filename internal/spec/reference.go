package spec

import (
	"fmt"
	"strings"
)

// Reference returns the Markdown reference of the spec language: every
// block and attribute with its type, default, example and meaning. It is
// generated from the decoder's own schema, and docs/spec.md embeds it (a
// test keeps the two equal).
func Reference() string {
	var b strings.Builder
	table := func(title, doc string, attrs []attr) {
		fmt.Fprintf(&b, "### %s\n\n%s\n\n", title, doc)
		fmt.Fprintln(&b, "| attribute | type | default | example | meaning |")
		fmt.Fprintln(&b, "|---|---|---|---|---|")
		for _, a := range attrs {
			typ := a.kind.String()
			if a.typeDoc != "" {
				typ = a.typeDoc
			}
			if a.kind == kInt && a.max > 0 {
				typ = fmt.Sprintf("number (whole, %d-%d)", a.min, a.max)
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | `%s` | %s |\n", a.name, typ, cell(a.def), a.example, cell(a.doc))
		}
		fmt.Fprintln(&b)
	}
	table("variable \"NAME\"", "A variable, used as `var.NAME`. Its value comes from `--var NAME=VALUE`, then `IMAGECTL_VAR_NAME`, then `default`. Values for non-string types are parsed as HCL expressions (`--var 'pythons=[\"3.10\"]'`).", variableAttrs)
	table("image \"NAME\"", imageBlock.doc, append(append([]attr{}, imageOnly...), imageBlock.attrs...))
	var sub func(prefix string, bl *block)
	sub = func(prefix string, bl *block) {
		for _, s := range bl.blocks {
			path := prefix + s.name
			table(path+" { }", s.doc, s.attrs)
			sub(path+" > ", s)
		}
	}
	sub("", imageBlock)
	fmt.Fprintf(&b, "### defaults\n\nThe same attributes and blocks as an image, except `name` and `matrix`; at most one per file. An image's own attributes win; `env` and `labels` merge key by key.\n\n")
	fmt.Fprintf(&b, "### Functions\n\n%s\n", "`"+strings.Join(FunctionNames(), "`, `")+"`")
	return b.String()
}

func cell(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

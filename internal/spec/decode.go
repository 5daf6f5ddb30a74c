package spec

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"imagectl/internal/compat"
	"imagectl/internal/runtime"
)

// maxCombinations bounds the images one matrix may produce.
const maxCombinations = 1000

var fileSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "variable", LabelNames: []string{"name"}},
		{Type: "defaults"},
		{Type: "image", LabelNames: []string{"name"}},
	},
}

// loader decodes files into images, collecting diagnostics.
type loader struct {
	opts     *options
	diags    hcl.Diagnostics
	usedVars map[string]bool
	// names maps each image name to where it was defined.
	names map[string]hcl.Range
	// inheritMemo holds the inherited attributes of each image label of
	// the file being decoded.
	inheritMemo map[string]inheritResult
}

// collected are the attributes of an image or defaults body by dotted path
// ("runtime.storage.path"), in override order.
type collected map[string][]*hcl.Attribute

func (l *loader) errorf(subject hcl.Range, summary, detail string, args ...any) {
	l.diags = append(l.diags, &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  summary,
		Detail:   fmt.Sprintf(detail, args...),
		Subject:  subject.Ptr(),
	})
}

func (l *loader) decodeFile(f *hcl.File) []Image {
	content, d := f.Body.Content(fileSchema)
	l.diags = append(l.diags, d...)

	vars := map[string]cty.Value{}
	varRanges := map[string]hcl.Range{}
	for _, blk := range content.Blocks.OfType("variable") {
		name := blk.Labels[0]
		if prev, ok := varRanges[name]; ok {
			l.errorf(blk.LabelRanges[0], "Duplicate variable", "Variable %q is already declared at %s.", name, prev)
			continue
		}
		varRanges[name] = blk.DefRange
		vars[name] = l.decodeVariable(blk)
	}
	ctx := &hcl.EvalContext{
		Variables: map[string]cty.Value{"var": cty.ObjectVal(vars)},
		Functions: functions,
	}

	defs := collected{}
	for i, blk := range content.Blocks.OfType("defaults") {
		if i > 0 {
			l.errorf(blk.DefRange, "Duplicate defaults block", "A file has at most one defaults block; the first is at %s.", content.Blocks.OfType("defaults")[0].DefRange)
			continue
		}
		l.collect(blk.Body, imageBlock, "", nil, defs)
	}

	// Every image body is collected first, so that inherits can refer to
	// blocks later in the file.
	blocks := content.Blocks.OfType("image")
	l.inheritMemo = map[string]inheritResult{}
	owns := map[string]collected{}
	for _, blk := range blocks {
		own := collected{}
		l.collect(blk.Body, imageBlock, "", imageOnly, own)
		if _, dup := owns[blk.Labels[0]]; !dup {
			owns[blk.Labels[0]] = own
		}
	}
	var imgs []Image
	for _, blk := range blocks {
		own := collected{}
		// Collected again (not from owns) so a duplicate label keeps its own body;
		// its diagnostics were reported above and are deduplicated.
		l.collect(blk.Body, imageBlock, "", imageOnly, own)
		parents, ok := l.inherited(ctx, blk.Labels[0], own, owns, nil)
		if !ok {
			continue
		}
		imgs = append(imgs, l.decodeImage(ctx, blk, merge(defs, merge(parents, own)), own)...)
	}
	return imgs
}

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

var variableSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "type"}, {Name: "default"}, {Name: "description"}},
}

// decodeVariable returns the variable's value: --var, then the
// environment, then the default. A variable that failed to decode is
// cty.DynamicVal so that its uses raise no further errors.
func (l *loader) decodeVariable(blk *hcl.Block) cty.Value {
	name := blk.Labels[0]
	if !hclsyntax.ValidIdentifier(name) {
		l.errorf(blk.LabelRanges[0], "Invalid variable name", "%q is not a valid identifier: use letters, digits, '_' and '-', starting with a letter.", name)
		return cty.DynamicVal
	}
	content, d := blk.Body.Content(variableSchema)
	l.diags = append(l.diags, d...)
	if d.HasErrors() {
		return cty.DynamicVal
	}
	ty := cty.DynamicPseudoType
	if a, ok := content.Attributes["type"]; ok {
		t, d := typeexprConstraint(a.Expr)
		l.diags = append(l.diags, d...)
		if d.HasErrors() {
			return cty.DynamicVal
		}
		ty = t
	}
	if a, ok := content.Attributes["description"]; ok {
		v, d := a.Expr.Value(nil)
		l.diags = append(l.diags, d...)
		if !d.HasErrors() && (v.IsNull() || !v.Type().Equals(cty.String)) {
			l.errorf(a.Expr.Range(), "Invalid description", "A variable's description must be a string.")
		}
	}

	if s, ok := l.opts.vars[name]; ok {
		l.usedVars[name] = true
		return l.varFromString(blk, ty, s, "--var "+name)
	}
	if s, ok := l.opts.env(EnvPrefix + name); ok {
		return l.varFromString(blk, ty, s, EnvPrefix+name)
	}
	a, ok := content.Attributes["default"]
	if !ok {
		l.errorf(blk.DefRange, "Variable has no value", "Variable %q has no default: set it with --var %s=VALUE or %s%s=VALUE.", name, name, EnvPrefix, name)
		return cty.DynamicVal
	}
	v, d := a.Expr.Value(&hcl.EvalContext{Functions: functions})
	l.diags = append(l.diags, d...)
	if d.HasErrors() {
		return cty.DynamicVal
	}
	cv, err := convert.Convert(v, ty)
	if err != nil {
		l.errorf(a.Expr.Range(), "Invalid default value", "The default of variable %q does not match its type %s: %v.", name, ty.FriendlyName(), err)
		return cty.DynamicVal
	}
	return cv
}

// varFromString turns a --var or environment value into the variable's
// type: as is for strings, parsed as an HCL expression otherwise.
func (l *loader) varFromString(blk *hcl.Block, ty cty.Type, s, from string) cty.Value {
	if ty == cty.String || ty == cty.DynamicPseudoType {
		return cty.StringVal(s)
	}
	expr, d := hclsyntax.ParseExpression([]byte(s), from, hcl.InitialPos)
	var v cty.Value
	if !d.HasErrors() {
		v, d = expr.Value(&hcl.EvalContext{Functions: functions})
	}
	if d.HasErrors() {
		l.errorf(blk.DefRange, "Invalid variable value", "The value of %s is not a valid %s: %s.", from, ty.FriendlyName(), d.Error())
		return cty.DynamicVal
	}
	cv, err := convert.Convert(v, ty)
	if err != nil {
		l.errorf(blk.DefRange, "Invalid variable value", "The value of %s is not a valid %s: %v.", from, ty.FriendlyName(), err)
		return cty.DynamicVal
	}
	return cv
}

// bodySchema is the HCL schema of b's body, with extra attributes.
func bodySchema(b *block, extra []attr) *hcl.BodySchema {
	s := &hcl.BodySchema{}
	for _, a := range append(extra[:len(extra):len(extra)], b.attrs...) {
		s.Attributes = append(s.Attributes, hcl.AttributeSchema{Name: a.name})
	}
	for _, sub := range b.blocks {
		s.Blocks = append(s.Blocks, hcl.BlockHeaderSchema{Type: sub.name})
	}
	return s
}

// collect adds body's attributes (strictly checked against b) to into.
func (l *loader) collect(body hcl.Body, b *block, prefix string, extra []attr, into collected) {
	content, d := body.Content(bodySchema(b, extra))
	l.diags = append(l.diags, d...)
	for name, a := range content.Attributes {
		into[prefix+name] = append(into[prefix+name], a)
	}
	for _, sub := range b.blocks {
		blks := content.Blocks.OfType(sub.name)
		for i, blk := range blks {
			if i > 0 {
				l.errorf(blk.DefRange, fmt.Sprintf("Duplicate %s block", sub.name), "Only one %s block is allowed here; the first is at %s.", sub.name, blks[0].DefRange)
				continue
			}
			l.collect(blk.Body, sub, prefix+sub.name+".", nil, into)
		}
	}
}

// merge returns defaults overridden by own.
func merge(defs, own collected) collected {
	out := collected{}
	for k, v := range defs {
		out[k] = append(out[k], v...)
	}
	for k, v := range own {
		out[k] = append(out[k], v...)
	}
	return out
}

// decodeImage evaluates one image block: attrs are its attributes with
// defaults and parents applied, own its own (for matrix and name).
func (l *loader) decodeImage(ctx *hcl.EvalContext, blk *hcl.Block, attrs, own collected) []Image {
	label := blk.Labels[0]

	combos := []map[string]cty.Value{{}}
	var keys []string
	if as := own["matrix"]; len(as) > 0 {
		var ok bool
		keys, combos, ok = l.evalMatrix(ctx, as[0])
		if !ok {
			return nil
		}
		if len(own["name"]) == 0 {
			l.errorf(blk.DefRange, "Matrix without a name", `Image %q has a matrix, so it needs a name expression that uses the matrix keys (%s), e.g. name = "%s-${%s}", so that every combination gets its own name.`, label, strings.Join(keys, ", "), label, keys[0])
			return nil
		}
	}

	var imgs []Image
	for _, combo := range combos {
		ictx := ctx.NewChild()
		ictx.Variables = combo
		img := Image{
			Name:   label,
			File:   blk.DefRange.Filename,
			Line:   blk.DefRange.Start.Line,
			Column: blk.DefRange.Start.Column,
		}
		if len(keys) > 0 {
			img.Matrix = map[string]string{}
			for _, k := range keys {
				img.Matrix[k] = combo[k].AsString()
			}
		}
		nameRange := blk.LabelRanges[0]
		if as := own["name"]; len(as) > 0 {
			v, ok := l.eval(ictx, as[0], attr{name: "name", kind: kString, check: checkName})
			if !ok {
				continue
			}
			if v != nil {
				img.Name = v.(string)
			}
			nameRange = as[0].Expr.Range()
		} else if err := checkName(label); err != nil {
			l.errorf(nameRange, "Invalid image name", "%v.", err)
			continue
		}
		ranges := map[string]hcl.Range{}
		before := len(l.diags)
		nulls := map[string]bool{}
		l.apply(ictx, imageBlock, "", attrs, &img, ranges, nulls)
		for _, req := range []string{"base", "python", "repos.staging", "repos.release"} {
			if _, ok := ranges[req]; !ok && (!hasAttr(attrs, req) || nulls[req]) {
				l.errorf(blk.DefRange, "Missing required attribute", "Image %q needs %s (in the image block or the file's defaults block).", img.Name, req)
			}
		}
		if prev, ok := l.names[img.Name]; ok {
			hint := ""
			if len(keys) > 0 {
				hint = fmt.Sprintf(" Make the name use every matrix key (%s).", strings.Join(keys, ", "))
			}
			l.errorf(nameRange, "Duplicate image name", "Image name %q is already used by the image at %s.%s", img.Name, prev, hint)
			continue
		}
		l.names[img.Name] = nameRange
		if hasErrors(l.diags[before:]) {
			continue
		}
		if !l.applyCompat(&img, ranges, blk.DefRange) {
			continue
		}
		imgs = append(imgs, img)
	}
	return imgs
}

func hasAttr(c collected, path string) bool { return len(c[path]) > 0 }

func hasErrors(ds hcl.Diagnostics) bool { return hcl.Diagnostics(ds).HasErrors() }

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

// apply evaluates b's attributes from attrs into img, recording each set
// attribute's range.
func (l *loader) apply(ctx *hcl.EvalContext, b *block, prefix string, attrs collected, img *Image, ranges map[string]hcl.Range, nulls map[string]bool) {
	for _, at := range b.attrs {
		path := prefix + at.name
		as := attrs[path]
		if len(as) == 0 {
			continue
		}
		if at.kind == kStringMap {
			merged := map[string]string{}
			set := false
			for _, a := range as {
				v, ok := l.eval(ctx, a, at)
				if ok && v != nil {
					for k, s := range v.(map[string]string) {
						merged[k] = s
					}
					set = true
				}
			}
			if set {
				at.set(img, merged)
				ranges[path] = as[len(as)-1].Expr.Range()
			}
			continue
		}
		a := as[len(as)-1]
		v, ok := l.eval(ctx, a, at)
		if ok && v != nil {
			at.set(img, v)
			ranges[path] = a.Expr.Range()
		} else if ok {
			nulls[path] = true
		}
	}
	for _, sub := range b.blocks {
		l.apply(ctx, sub, prefix+sub.name+".", attrs, img, ranges, nulls)
	}
}

// eval evaluates one attribute and converts it to at's kind. It returns
// (nil, true) for null (unset) and (nil, false) after an error.
func (l *loader) eval(ctx *hcl.EvalContext, a *hcl.Attribute, at attr) (any, bool) {
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
		return runtime.Duration(dur), true
	}
	return fail("Internal error", "attribute %s has no decoder", a.Name)
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// applyCompat applies the catalog to img and fills in what the chosen
// wheel decides (variant, NCCL and cuDNN pins) and the runtime facts.
func (l *loader) applyCompat(img *Image, ranges map[string]hcl.Range, def hcl.Range) bool {
	res, problems := compat.Check(compat.Request{
		CUDA:         img.CUDA,
		Torch:        img.Torch,
		TorchVariant: img.TorchVariant,
		Python:       img.Python,
		NCCL:         img.NCCL,
		CUDNN:        img.CUDNN,
		DriverFloor:  img.DriverFloor,
	})
	for _, p := range problems {
		rng, ok := ranges[p.Field]
		if !ok && p.Field == "cuda" {
			rng, ok = ranges["torch"]
		}
		if !ok {
			rng = def
		}
		l.diags = append(l.diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  p.Summary,
			Detail:   fmt.Sprintf("%s (image %q)", p.Detail, img.Name),
			Subject:  rng.Ptr(),
		})
	}
	if len(problems) > 0 {
		return false
	}
	if img.Torch != "" {
		img.TorchVariant = res.Wheel.Variant
		if res.Wheel.NCCL != nil {
			img.NCCL = res.Wheel.NCCL.Version
		}
		if res.Wheel.CUDNN != nil {
			img.CUDNN = res.Wheel.CUDNN.Version
		}
	}
	img.Runtime.DriverFloor = img.DriverFloor
	img.Runtime.Image = runtime.ImageFacts{
		Name: img.Name, CUDA: img.CUDA, Torch: img.Torch, Python: img.Python, NCCL: img.NCCL, CUDNN: img.CUDNN,
	}
	return true
}

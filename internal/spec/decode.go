package spec

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"imagectl/internal/compat"
	"imagectl/internal/initconfig"
	"imagectl/internal/pep"
)

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
	// imageBlocks counts the image blocks of every file decoded.
	imageBlocks int
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
	l.imageBlocks += len(blocks)
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
			if sub.present != nil {
				// The block's presence, for an empty one: a key no attribute
				// path can have, holding a stand-in at the block's position.
				into[presenceKey(prefix, sub)] = append(into[presenceKey(prefix, sub)], &hcl.Attribute{Name: sub.name, Range: blk.DefRange, NameRange: blk.DefRange})
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
		l.checkPlatforms(&img, ranges)
		l.checkBusBandwidth(&img, ranges)
		l.checkBaseCUDA(&img, ranges)
		l.checkRuntimeServices(&img, ranges)
		if hasErrors(l.diags[before:]) {
			continue
		}
		if !l.applyCompat(&img, ranges, blk.DefRange) {
			continue
		}
		if !l.checkFrozenCore(&img, ranges) || !l.applyFamily(&img, ranges) {
			continue
		}
		l.checkCUDATwice(&img, ranges)
		imgs = append(imgs, img)
	}
	return imgs
}

// elemRange is the position of element i of the list attribute path when
// the spec wrote it as a literal list, else the attribute's.
func elemRange(ranges map[string]hcl.Range, path string, i int) hcl.Range {
	if r, ok := ranges[fmt.Sprintf("%s[%d]", path, i)]; ok {
		return r
	}
	return ranges[path]
}

func hasAttr(c collected, path string) bool { return len(c[path]) > 0 }

func hasErrors(ds hcl.Diagnostics) bool { return hcl.Diagnostics(ds).HasErrors() }

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
			// A literal list's elements are positioned one by one
			// ("pip[1]"), so that a problem with one entry points at it.
			if tup, ok := a.Expr.(*hclsyntax.TupleConsExpr); ok {
				for i, e := range tup.Exprs {
					ranges[fmt.Sprintf("%s[%d]", path, i)] = e.Range()
				}
			}
		} else if ok {
			nulls[path] = true
		}
	}
	for _, sub := range b.blocks {
		if as := attrs[presenceKey(prefix, sub)]; sub.present != nil && len(as) > 0 {
			sub.present(img)
			ranges[prefix+sub.name] = as[len(as)-1].Range
		}
		l.apply(ctx, sub, prefix+sub.name+".", attrs, img, ranges, nulls)
	}
}

// presenceKey is where collect records that an optional block is there.
func presenceKey(prefix string, b *block) string { return prefix + b.name + "{}" }

// checkRuntimeServices checks the runtime block's user, ssh and jupyter:
// a user needs a name and a uid (its gid defaults to the uid), and sshd
// and Jupyter need a user (root logins are off; Jupyter refuses root).
func (l *loader) checkRuntimeServices(img *Image, ranges map[string]hcl.Range) {
	rt := &img.Runtime
	if u := rt.User; u != nil {
		for _, a := range []string{"name", "uid"} {
			if _, ok := ranges["runtime.user."+a]; !ok {
				l.errorf(ranges["runtime.user"], "Missing required attribute", "The runtime block's user needs %s (image %q).", a, img.Name)
			}
		}
		if _, ok := ranges["runtime.user.gid"]; !ok {
			u.GID = u.UID
		}
	}
	for _, svc := range []struct {
		name string
		on   bool
		why  string
	}{
		{"ssh", rt.SSH != nil, "root logins are off, so sshd needs a user to admit"},
		{"jupyter", rt.Jupyter != nil, "Jupyter runs as the user (it refuses to run as root)"},
	} {
		if svc.on && rt.User == nil {
			l.errorf(ranges["runtime."+svc.name], "Service without a user", "The runtime block declares %s but no user block: %s. Add user { name = \"jovyan\"  uid = 1000 } (image %q).", svc.name, svc.why, img.Name)
		}
	}
}

// checkPlatforms fills in the default platform, rejects a platform named
// twice and sorts the list, so that the order in the spec does not change
// the image (nor its lock's inputs digest).
func (l *loader) checkPlatforms(img *Image, ranges map[string]hcl.Range) {
	if len(img.Platforms) == 0 {
		img.Platforms = []string{compat.DefaultPlatform}
		return
	}
	ps := slices.Clone(img.Platforms)
	slices.Sort(ps)
	for i := 1; i < len(ps); i++ {
		if ps[i] == ps[i-1] {
			l.errorf(ranges["platforms"], "Duplicate platform", "Platform %q is listed twice in platforms (image %q).", ps[i], img.Name)
			return
		}
	}
	img.Platforms = ps
}

// checkBusBandwidth warns at verify.min_busbw_gbps when verify.min_gpus
// lets one GPU pass: one GPU has no bus bandwidth, so verification skips
// the floor there and it is never enforced.
func (l *loader) checkBusBandwidth(img *Image, ranges map[string]hcl.Range) {
	v := img.Verify
	if v.MinBusBandwidthGBps <= 0 || v.CPUOnly || v.MinGPUs >= 2 {
		return
	}
	rng, ok := ranges["verify.min_busbw_gbps"]
	if !ok {
		return
	}
	gpus := "unset (1)"
	if r, ok := ranges["verify.min_gpus"]; ok {
		gpus = fmt.Sprintf("%d at %s", v.MinGPUs, r)
	}
	l.diags = append(l.diags, &hcl.Diagnostic{
		Severity: hcl.DiagWarning,
		Summary:  "Bus bandwidth floor not enforceable",
		// No image name: the images of one matrix share the warning.
		Detail: fmt.Sprintf("min_busbw_gbps = %g with min_gpus %s: a host with one GPU passes verification, and one GPU has no bus bandwidth, so the floor is skipped there. Set min_gpus = 2 or more to enforce it, or drop min_busbw_gbps.",
			v.MinBusBandwidthGBps, gpus),
		Subject: rng.Ptr(),
	})
}

// checkBaseCUDA requires cuda to agree with the CUDA version an
// nvidia/cuda base's tag names.
func (l *loader) checkBaseCUDA(img *Image, ranges map[string]hcl.Range) {
	tagged, ok := compat.BaseCUDA(img.Base)
	if !ok || img.CUDA == "" || img.CUDA == tagged {
		return
	}
	rng, ok := ranges["cuda"]
	if !ok {
		rng = ranges["base"]
	}
	l.errorf(rng, "cuda disagrees with the base", "cuda = %q, but the base %s is CUDA %s (image %q). Set cuda = %q, or choose an nvidia/cuda:%s.x base.", img.CUDA, img.Base, tagged, img.Name, tagged, img.CUDA)
}

// checkFrozenCore refuses a pip entry that restates a project of the
// frozen core (torch, the NCCL and cuDNN wheels it pins) with another
// version or a URL: the lock would hold two answers for one project.
func (l *loader) checkFrozenCore(img *Image, ranges map[string]hcl.Range) bool {
	if img.Torch == "" {
		return true
	}
	core := map[string]string{"torch": img.Torch}
	if w, ok := compat.LookupWheel(img.Torch, img.TorchVariant); ok {
		for _, p := range []*compat.Pin{w.NCCL, w.CUDNN} {
			if p != nil {
				core[pep.Normalize(p.Package)] = p.Version
			}
		}
	}
	good := true
	for i, s := range img.Pip {
		r, err := pep.ParseRequirement(s)
		if err != nil {
			continue // reported by the pip attribute's check
		}
		want, ok := core[pep.Normalize(r.Name)]
		if !ok || (r.URL == "" && (r.Specifier == "" || r.Specifier == "=="+want)) {
			continue
		}
		l.errorf(elemRange(ranges, "pip", i), "pip restates the frozen core", "pip entry %q names %s, which the image pins to %s (image %q): the torch release and the wheels it pins come from torch, nccl and cudnn. Drop the entry, or change the version there.", s, r.Name, want, img.Name)
		good = false
	}
	return good
}

// checkCUDATwice warns at base when an nvidia/cuda runtime or devel base
// meets torch CUDA wheels, which bring the same libraries as nvidia-*
// wheels: the image would carry each twice (docs/build.md, "CUDA shipped
// twice"; the build reports them per library with their bytes).
func (l *loader) checkCUDATwice(img *Image, ranges map[string]hcl.Range) {
	flavour := compat.CUDABaseFlavour(img.Base)
	if !strings.HasPrefix(img.TorchVariant, "cu") || (flavour != "runtime" && flavour != "devel") {
		return
	}
	rng, ok := ranges["base"]
	if !ok {
		return
	}
	l.diags = append(l.diags, &hcl.Diagnostic{
		Severity: hcl.DiagWarning,
		Summary:  "CUDA shipped twice",
		Detail: fmt.Sprintf("The %s flavour of nvidia/cuda holds the CUDA runtime libraries as debs (cuBLAS, cuFFT, cuRAND, cuSOLVER, cuSPARSE, NCCL, NVRTC, NVTX), and the torch %s wheels bring their own as nvidia-* wheels: the image carries each twice, with two copies on the loader path. Use the -base- flavour (cuda-cudart and cuda-compat only) under the torch wheels; imagectl build reports each library held twice with its bytes.",
			flavour, img.TorchVariant),
		Subject: rng.Ptr(),
	})
}

// applyCompat applies the catalog to img and fills in what the chosen
// wheel decides (variant, NCCL and cuDNN pins) and the runtime facts.
func (l *loader) applyCompat(img *Image, ranges map[string]hcl.Range, def hcl.Range) bool {
	req := img.CompatRequest()
	res, problems := compat.Check(req)
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
	// The wheel decides the variant and the NCCL and cuDNN pins; the
	// driver floor stays the spec's (the lock's core adds the catalog's).
	pins := res.Pins(req)
	img.TorchVariant, img.NCCL, img.CUDNN = pins.TorchVariant, pins.NCCL, pins.CUDNN
	img.Runtime.DriverFloor = img.DriverFloor
	img.Runtime.Image = initconfig.ImageFacts{
		Name: img.Name, CUDA: img.CUDA, Torch: img.Torch, Python: img.Python, NCCL: img.NCCL, CUDNN: img.CUDNN,
	}
	return true
}

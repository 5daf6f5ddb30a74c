package spec

import (
	"context"
	"flag"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Update is the -update flag of both test packages: rewrite golden files and
// the reference in docs/spec.md.
var Update = flag.Bool("update", false, "rewrite golden files and the reference in docs/spec.md")

// allAttrs returns every attribute of the image schema by dotted path.
func allAttrs() map[string]attr {
	out := map[string]attr{}
	var walk func(prefix string, b *block)
	walk = func(prefix string, b *block) {
		for _, a := range b.attrs {
			out[prefix+a.name] = a
		}
		for _, s := range b.blocks {
			walk(prefix+s.name+".", s)
		}
	}
	walk("", imageBlock)
	return out
}

// leafFields lists the Go paths of Image's leaf fields ("Runtime.Storage.Path").
func leafFields(t reflect.Type, prefix string) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		ft := f.Type
		if ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct {
			ft = ft.Elem() // an optional block
		}
		if ft.Kind() == reflect.Struct && ft.Name() != "Duration" {
			out = append(out, leafFields(ft, prefix+f.Name+".")...)
			continue
		}
		out = append(out, prefix+f.Name)
	}
	return out
}

// notFromSpec are the Image fields that no spec attribute sets directly.
var notFromSpec = map[string]string{
	"Name":                     "the block label or the name attribute",
	"File":                     "the position of the image block",
	"Line":                     "the position of the image block",
	"Column":                   "the position of the image block",
	"Matrix":                   "the matrix combination",
	"Runtime.DriverFloor":      "copied from driver_floor",
	"Runtime.Image.Name":       "filled from the image",
	"Runtime.Image.CUDA":       "filled from the image",
	"Runtime.Image.Torch":      "filled from the image",
	"Runtime.Image.Python":     "filled from the image",
	"Runtime.Image.NCCL":       "filled from the image",
	"Runtime.Image.CUDNN":      "filled from the image",
	"Runtime.Image.LockDigest": "set by the lock stage",
}

// Every Image field is set by exactly one attribute or is listed in
// notFromSpec, and every attribute names a real field: the schema (and so
// the generated reference in docs/spec.md) stays in step with the Go types.
func TestSchemaCoversImage(t *testing.T) {
	byField := map[string]string{}
	for path, a := range allAttrs() {
		if a.field == "" || a.set == nil {
			t.Errorf("attribute %s has no field or set func", path)
			continue
		}
		if prev, ok := byField[a.field]; ok {
			t.Errorf("attributes %s and %s both set %s", prev, path, a.field)
		}
		byField[a.field] = path
	}
	fields := leafFields(reflect.TypeOf(Image{}), "")
	known := map[string]bool{}
	for _, f := range fields {
		known[f] = true
		_, setBy := byField[f]
		_, other := notFromSpec[f]
		if setBy == other {
			t.Errorf("Image.%s: set by attribute %v, listed in notFromSpec %v; want exactly one", f, setBy, other)
		}
	}
	for f, path := range byField {
		if !known[f] {
			t.Errorf("attribute %s sets %s, which is not a field of Image", path, f)
		}
	}
}

// fieldValue returns the value at a Go field path of img.
func fieldValue(img *Image, path string) any {
	v := reflect.ValueOf(img).Elem()
	for _, p := range strings.Split(path, ".") {
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return nil // a block not given
			}
			v = v.Elem()
		}
		v = v.FieldByName(p)
	}
	return v.Interface()
}

// filledByCatalog are attributes Load fills from the torch wheel when unset.
var filledByCatalog = map[string]bool{"nccl": true, "cudnn": true}

// Each attribute's set func writes the field it names.
func TestAttributeFields(t *testing.T) {
	samples := map[kind]any{
		kString: "x", kStrings: []string{"x"}, kStringMap: map[string]string{"k": "v"}, kBool: true,
		kInt: int64(7), kNumber: 1.5, kSize: int64(1024), kDuration: ParseDurationMust("5s"),
	}
	for path, a := range allAttrs() {
		var img Image
		before := fieldValue(&img, a.field)
		a.set(&img, samples[a.kind])
		if after := fieldValue(&img, a.field); reflect.DeepEqual(before, after) {
			t.Errorf("attribute %s: set leaves Image.%s unchanged", path, a.field)
		}
	}
}

// Each attribute's documented example decodes and lands in its field.
func TestAttributeExamples(t *testing.T) {
	const header = `
variable "registry" { default = "registry.example" }
variable "torch_index" { default = "http://torch.example/" }
variable "wheel_index" { default = "http://wheels.example/simple/" }
`
	base := map[string]string{
		"base": `"registry.example/base:1"`, "python": `"3.10"`,
		"repos.staging": `"registry.example/s/x"`, "repos.release": `"registry.example/r/x"`,
	}
	companions := map[string]map[string]string{
		"cuda":          {"driver_floor": `"525.60.13"`},
		"torch_variant": {"cuda": `"12.4"`, "torch": `"2.6.0"`, "driver_floor": `"525.60.13"`},
		"nccl":          {"cuda": `"11.8"`, "torch": `"2.6.0"`, "driver_floor": `"525.60.13"`},
		"cudnn":         {"cuda": `"11.8"`, "torch": `"2.6.0"`, "driver_floor": `"525.60.13"`},
	}
	user := map[string]string{"runtime.user.name": `"jovyan"`, "runtime.user.uid": `1000`}
	for p := range allAttrs() {
		if strings.HasPrefix(p, "runtime.user.") || strings.HasPrefix(p, "runtime.ssh.") || strings.HasPrefix(p, "runtime.jupyter.") {
			companions[p] = map[string]string{}
			for k, v := range user {
				if k != p {
					companions[p][k] = v
				}
			}
		}
	}
	// requiredInBlock are attributes an optional block cannot go without:
	// "without" them there is nothing to load.
	requiredInBlock := map[string]bool{"runtime.user.name": true, "runtime.user.uid": true}
	// instead are values used in place of the example where the example
	// equals what the companions already decide.
	instead := map[string]string{"torch_variant": `"cu126"`, "runtime.user.gid": `1001`}
	render := func(vals map[string]string) string {
		// group dotted paths into blocks
		var b strings.Builder
		b.WriteString(header + "image \"x\" {\n")
		var write func(prefix string, bl *block)
		write = func(prefix string, bl *block) {
			for _, a := range bl.attrs {
				if v, ok := vals[prefix+a.name]; ok {
					fmt.Fprintf(&b, "%s = %s\n", a.name, v)
				}
			}
			for _, s := range bl.blocks {
				if s.present != nil && !hasPrefixKey(vals, prefix+s.name+".") {
					continue // an optional block turns a feature on
				}
				fmt.Fprintf(&b, "%s {\n", s.name)
				write(prefix+s.name+".", s)
				b.WriteString("}\n")
			}
		}
		write("", imageBlock)
		b.WriteString("}\n")
		return b.String()
	}
	load := func(t *testing.T, vals map[string]string) *Image {
		t.Helper()
		src := render(vals)
		imgs, err := LoadSource(context.Background(), "example.hcl", []byte(src), WithEnv(func(string) (string, bool) { return "", false }))
		if err != nil {
			t.Fatalf("LoadSource(\n%s) = %v", src, err)
		}
		return &imgs[0]
	}
	var paths []string
	for p := range allAttrs() {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, path := range paths {
		a := allAttrs()[path]
		t.Run(path, func(t *testing.T) {
			without := map[string]string{}
			for k, v := range base {
				without[k] = v
			}
			for k, v := range companions[path] {
				without[k] = v
			}
			with := map[string]string{}
			for k, v := range without {
				with[k] = v
			}
			with[path] = a.example
			if v, ok := instead[path]; ok {
				with[path] = v
			}
			if requiredInBlock[path] {
				if v := fieldValue(load(t, with), a.field); reflect.ValueOf(v).IsZero() {
					t.Errorf("example %s = %s left %s zero", path, a.example, a.field)
				}
				return
			}
			before := fieldValue(load(t, without), a.field)
			after := fieldValue(load(t, with), a.field)
			if filledByCatalog[path] {
				return // the chosen wheel decides them; the bad corpus checks mismatches
			}
			if reflect.DeepEqual(before, after) {
				t.Errorf("setting %s = %s leaves Image.%s at %v", path, a.example, a.field, after)
			}
		})
	}
}

// docs/spec.md embeds Reference() between markers; -update rewrites it.
func TestReferenceInDocs(t *testing.T) {
	const file = "../../docs/spec.md"
	const begin, end = "<!-- BEGIN REFERENCE (generated by go test ./internal/spec -update) -->\n", "<!-- END REFERENCE -->\n"
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the reference markers %q ... %q", file, begin, end)
	}
	got, want := doc[i+len(begin):j], Reference()
	if *Update {
		doc = doc[:i+len(begin)] + want + doc[j:]
		if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s is out of step with the schema (-want +got); run go test ./internal/spec -update:\n%s", file, diff)
	}
}

func ParseDurationMust(s string) any {
	d, err := ParseDuration(s)
	if err != nil {
		panic(err)
	}
	return d
}

// hasPrefixKey reports whether a key of m starts with prefix.
func hasPrefixKey(m map[string]string, prefix string) bool {
	for k := range m {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

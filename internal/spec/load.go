// Package spec decodes imagectl's HCL specs into concrete images.
//
// A spec file holds variable blocks, at most one defaults block and image
// blocks. Decoding is strict: an unknown attribute or block, a wrong type or
// an impossible version combination (see package compat) is an error with a
// file:line:col range. Load returns every error at once as a
// *DiagnosticsError, which renders them with hcl's diagnostic text writer.
package spec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"

	"imagectl/internal/exitcode"
	"imagectl/internal/logs"
)

// EnvPrefix prefixes the environment variables that set spec variables:
// IMAGECTL_VAR_registry sets var.registry.
const EnvPrefix = "IMAGECTL_VAR_"

type options struct {
	vars     map[string]string
	env      func(string) (string, bool)
	warnings *DiagnosticsError
}

// Option configures Load.
type Option func(*options) error

// WithVars sets spec variables by name, as --var name=value does; they win
// over the environment and the defaults. Setting a variable no loaded spec
// declares is an error. The default is no variables.
func WithVars(vars map[string]string) Option {
	return func(o *options) error {
		for k, v := range vars {
			o.vars[k] = v
		}
		return nil
	}
}

// WithEnv sets how IMAGECTL_VAR_<name> is looked up. The default is
// os.LookupEnv.
func WithEnv(lookup func(string) (string, bool)) Option {
	return func(o *options) error {
		if lookup == nil {
			return errors.New("WithEnv: nil lookup")
		}
		o.env = lookup
		return nil
	}
}

// WithWarnings hands a Load's warnings to into (Diagnostics and Files, to
// render with WriteText) instead of logging them. The default logs each
// warning to the context's logger.
func WithWarnings(into *DiagnosticsError) Option {
	return func(o *options) error {
		if into == nil {
			return errors.New("spec warnings: nil destination")
		}
		o.warnings = into
		return nil
	}
}

func makeOptions(opts []Option) (*options, error) {
	o := &options{vars: map[string]string{}, env: os.LookupEnv}
	for _, opt := range opts {
		if err := opt(o); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// Load decodes the specs at paths (files, or directories whose *.hcl files
// are read in name order) into concrete images, applying variables,
// functions, defaults, matrices and the compatibility catalog's rules. Image
// names are unique across all paths. Spec errors come back together as a
// *DiagnosticsError; errors reading the files are plain wrapped errors.
func Load(ctx context.Context, paths []string, opts ...Option) ([]Image, error) {
	o, err := makeOptions(opts)
	if err != nil {
		return nil, err
	}
	files, err := expand(paths)
	if err != nil {
		return nil, err
	}
	var srcs []source
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("reading spec: %w", err)
		}
		srcs = append(srcs, source{name: f, data: b})
	}
	return load(ctx, srcs, o)
}

// LoadSource decodes one spec held in memory; filename names it in
// diagnostics.
func LoadSource(ctx context.Context, filename string, src []byte, opts ...Option) ([]Image, error) {
	o, err := makeOptions(opts)
	if err != nil {
		return nil, err
	}
	return load(ctx, []source{{name: filename, data: src}}, o)
}

type source struct {
	name string
	data []byte
}

// expand turns paths into the spec files they name.
func expand(paths []string) ([]string, error) {
	if len(paths) == 0 {
		return nil, errors.New("no spec paths given")
	}
	var files []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("reading spec: %w", err)
		}
		if !fi.IsDir() {
			files = append(files, p)
			continue
		}
		ents, err := os.ReadDir(p)
		if err != nil {
			return nil, fmt.Errorf("reading spec directory: %w", err)
		}
		n := len(files)
		for _, e := range ents {
			if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".hcl") {
				files = append(files, filepath.Join(p, e.Name()))
			}
		}
		if len(files) == n {
			return nil, &NoSpecError{Path: p, Dir: true}
		}
	}
	// The same file named twice (a directory and a file in it) loads once.
	seen := map[string]bool{}
	return slices.DeleteFunc(files, func(f string) bool {
		k := filepath.Clean(f)
		dup := seen[k]
		seen[k] = true
		return dup
	}), nil
}

func load(ctx context.Context, srcs []source, o *options) ([]Image, error) {
	parser := hclparse.NewParser()
	l := &loader{opts: o, usedVars: map[string]bool{}, names: map[string]hcl.Range{}}
	var imgs []Image
	for _, src := range srcs {
		f, d := parser.ParseHCL(src.data, src.name)
		l.diags = append(l.diags, d...)
		if f == nil || d.HasErrors() {
			continue
		}
		imgs = append(imgs, l.decodeFile(f)...)
	}
	var unused []string
	for k := range o.vars {
		if !l.usedVars[k] {
			unused = append(unused, k)
		}
	}
	sort.Strings(unused)
	for _, k := range unused {
		l.diags = append(l.diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  fmt.Sprintf("Undeclared variable %q (--var %s)", k, k),
			Detail:   fmt.Sprintf("A value was given for var.%s with --var, but no loaded spec declares a variable block %q.", k, k),
		})
	}
	diags := dedupe(l.diags)
	if diags.HasErrors() {
		return nil, &DiagnosticsError{Diagnostics: diags, Files: parser.Files()}
	}
	if l.imageBlocks == 0 {
		var names []string
		for _, src := range srcs {
			names = append(names, src.name)
		}
		return nil, &NoSpecError{Path: strings.Join(names, ", ")}
	}
	if o.warnings != nil {
		o.warnings.Diagnostics, o.warnings.Files = diags, parser.Files()
		return imgs, nil
	}
	for _, d := range diags {
		if d.Severity == hcl.DiagWarning {
			logs.From(ctx).Warn(d.Error())
		}
	}
	return imgs, nil
}

// NoSpecError is a Load that found no image to load: a directory without
// *.hcl files, or files without image blocks. A directory without specs
// reads as a missing path (errors.Is fs.ErrNotExist).
type NoSpecError struct {
	// Path names the directory, or the files loaded.
	Path string
	// Dir is true for a directory without *.hcl files.
	Dir bool
}

func (e *NoSpecError) Error() string {
	if e.Dir {
		return fmt.Sprintf("no spec found: directory %s holds no *.hcl files", e.Path)
	}
	return fmt.Sprintf("no spec found: %s declares no image block (image \"NAME\" { ... })", e.Path)
}

// Is makes a directory without specs match fs.ErrNotExist.
func (e *NoSpecError) Is(target error) bool { return e.Dir && target == fs.ErrNotExist }

// dedupe drops repeated diagnostics (a defaults attribute fails once per
// image and matrix combination).
func dedupe(diags hcl.Diagnostics) hcl.Diagnostics {
	seen := map[string]bool{}
	var out hcl.Diagnostics
	for _, d := range diags {
		k := fmt.Sprintf("%d|%v|%s|%s", d.Severity, d.Subject, d.Summary, d.Detail)
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, d)
	}
	return out
}

// DiagnosticsError carries the spec errors of a Load together with the
// sources, so that they render with file:line:col and a snippet.
type DiagnosticsError struct {
	Diagnostics hcl.Diagnostics
	Files       map[string]*hcl.File
}

// Error returns the first error and how many more there are.
func (e *DiagnosticsError) Error() string {
	var errs hcl.Diagnostics
	for _, d := range e.Diagnostics {
		if d.Severity == hcl.DiagError {
			errs = append(errs, d)
		}
	}
	if len(errs) == 0 {
		return "spec: no errors"
	}
	s := errs[0].Error()
	if errs[0].Subject == nil {
		// hcl renders a diagnostic without a range as "<nil>: ...".
		s = errs[0].Summary + "; " + errs[0].Detail
	}
	if len(errs) > 1 {
		s += fmt.Sprintf(" (and %d more errors)", len(errs)-1)
	}
	return s
}

// ExitCode implements exitcode.Coder: spec errors are exitcode.Failure.
func (e *DiagnosticsError) ExitCode() int { return exitcode.Failure }

// WriteText renders every diagnostic with hcl's text writer: file:line:col,
// the source snippet and the detail, wrapped at width (0: no wrapping).
func (e *DiagnosticsError) WriteText(w io.Writer, width uint, color bool) error {
	return hcl.NewDiagnosticTextWriter(w, e.Files, width, color).WriteDiagnostics(e.Diagnostics)
}

// Diagnostic is one spec diagnostic in a form for JSON output.
type Diagnostic struct {
	Severity  string `json:"severity"`
	Summary   string `json:"summary"`
	Detail    string `json:"detail,omitempty"`
	File      string `json:"file,omitempty"`
	Line      int    `json:"line,omitempty"`
	Column    int    `json:"column,omitempty"`
	EndLine   int    `json:"end_line,omitempty"`
	EndColumn int    `json:"end_column,omitempty"`
}

// List returns the diagnostics for JSON output.
func (e *DiagnosticsError) List() []Diagnostic {
	out := []Diagnostic{}
	for _, d := range e.Diagnostics {
		x := Diagnostic{Severity: "error", Summary: d.Summary, Detail: d.Detail}
		if d.Severity == hcl.DiagWarning {
			x.Severity = "warning"
		}
		if s := d.Subject; s != nil {
			x.File, x.Line, x.Column, x.EndLine, x.EndColumn = s.Filename, s.Start.Line, s.Start.Column, s.End.Line, s.End.Column
		}
		out = append(out, x)
	}
	return out
}

package bump

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	yaml "go.yaml.in/yaml/v3"
)

// File kinds.
const (
	KindDockerfile = "dockerfile"
	KindYAML       = "yaml"
	KindWorkflow   = "workflow"
	KindText       = "text"
)

// Pin is one digest reference found in a file.
type Pin struct {
	File string `json:"file"`
	Kind string `json:"kind"`
	// Line and Column (1-based, bytes) locate the reference.
	Line   int `json:"line"`
	Column int `json:"column"`
	// Ref is the reference as written: repository[:tag]@sha256:...
	Ref        string `json:"ref"`
	Repository string `json:"repository"`
	Tag        string `json:"tag,omitempty"`
	Digest     string `json:"digest"`
	// start and end are Ref's byte offsets in the file.
	start, end int
}

// refRE matches a digest reference: a repository (with a registry, port and
// path), an optional tag, @sha256:<64 hex>. name.NewDigest then checks it.
var refRE = regexp.MustCompile(`[A-Za-z0-9][A-Za-z0-9._\-/:]*@sha256:[0-9a-f]{64}`)

// KindOf classifies a file by its name: a Dockerfile (Dockerfile,
// Containerfile, *.Dockerfile, Dockerfile.*), a workflow (.yml/.yaml under
// .github/workflows), other YAML (Kubernetes manifests, compose files), or
// plain text.
func KindOf(path string) string {
	base := filepath.Base(path)
	lower := strings.ToLower(base)
	switch {
	case lower == "dockerfile" || lower == "containerfile" || strings.HasSuffix(lower, ".dockerfile") ||
		strings.HasPrefix(lower, "dockerfile.") || strings.HasPrefix(lower, "containerfile."):
		return KindDockerfile
	case strings.HasSuffix(lower, ".yml") || strings.HasSuffix(lower, ".yaml"):
		if strings.Contains(filepath.ToSlash(path), ".github/workflows/") {
			return KindWorkflow
		}
		return KindYAML
	}
	return KindText
}

// Find returns the digest references in content, a file of kind (KindOf):
// in a Dockerfile those of FROM, ARG and COPY/ADD --from (located with
// BuildKit's parser); in YAML the values of image, container and uses
// (docker://) keys, at any depth, in every document (located with the
// YAML parser's node positions); in plain text every
// repository@sha256:... A reference ggcr does not parse is left out.
func Find(path, kind string, content []byte) ([]Pin, error) {
	var spans [][2]int
	switch kind {
	case KindDockerfile:
		res, err := parser.Parse(bytes.NewReader(content))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		lines := lineOffsets(content)
		for _, n := range res.AST.Children {
			switch strings.ToLower(n.Value) {
			case "from", "arg", "copy", "add":
			default:
				continue
			}
			start, end := lines.span(n.StartLine, n.EndLine, len(content))
			spans = append(spans, matches(content, start, end)...)
		}
	case KindYAML, KindWorkflow:
		var err error
		if spans, err = yamlSpans(content); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	default:
		spans = matches(content, 0, len(content))
	}
	lines := lineOffsets(content)
	var out []Pin
	for _, s := range spans {
		ref := string(content[s[0]:s[1]])
		d, err := name.NewDigest(ref, name.StrictValidation)
		if err != nil {
			continue
		}
		p := Pin{File: path, Kind: kind, Ref: ref, Repository: d.Context().Name(), Digest: d.DigestStr(), start: s[0], end: s[1]}
		p.Line, p.Column = lines.position(s[0])
		if at := strings.LastIndex(ref, "@"); at > 0 {
			repoTag := ref[:at]
			if i := strings.LastIndex(repoTag, ":"); i > 0 && !strings.Contains(repoTag[i:], "/") {
				p.Tag = repoTag[i+1:]
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// matches are the references in content[start:end].
func matches(content []byte, start, end int) [][2]int {
	var out [][2]int
	for _, m := range refRE.FindAllIndex(content[start:end], -1) {
		// docker://IMAGE (an Actions step): the reference follows the scheme.
		if i := bytes.Index(content[start+m[0]:start+m[1]], []byte("://")); i >= 0 {
			m[0] += i + 3
		}
		out = append(out, [2]int{start + m[0], start + m[1]})
	}
	return out
}

// yamlKeys are the keys whose scalar values can be image references:
// image (Kubernetes, compose, Actions services and jobs' container.image),
// container (an Actions job's container: IMAGE) and uses (docker://IMAGE).
var yamlKeys = map[string]bool{"image": true, "container": true, "uses": true}

// yamlSpans locates the references among yamlKeys' values in every
// document of content.
func yamlSpans(content []byte) ([][2]int, error) {
	lines := lineOffsets(content)
	dec := yaml.NewDecoder(bytes.NewReader(content))
	var out [][2]int
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n == nil {
			return
		}
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if v.Kind == yaml.ScalarNode && yamlKeys[k.Value] && strings.Contains(v.Value, "@sha256:") &&
					(v.Style == 0 || v.Style == yaml.DoubleQuotedStyle || v.Style == yaml.SingleQuotedStyle) {
					start := lines.offset(content, v.Line, v.Column)
					end := lines.lineEnd(v.Line, len(content))
					for _, m := range matches(content, start, end) {
						if strings.Contains(v.Value, string(content[m[0]:m[1]])) {
							out = append(out, m)
							break
						}
					}
				}
				walk(v)
			}
			return
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, err
		}
		walk(&doc)
	}
	return out, nil
}

// offsets holds the byte offset of each line's start.
type offsets []int

func lineOffsets(b []byte) offsets {
	o := offsets{0}
	for i, c := range b {
		if c == '\n' {
			o = append(o, i+1)
		}
	}
	return o
}

// span is the byte range of lines first..last (1-based, inclusive).
func (o offsets) span(first, last, size int) (int, int) {
	if first < 1 {
		first = 1
	}
	start := size
	if first-1 < len(o) {
		start = o[first-1]
	}
	return start, o.lineEnd(last, size)
}

// lineEnd is the offset just past line's last byte.
func (o offsets) lineEnd(line, size int) int {
	if line < len(o) {
		return o[line]
	}
	return size
}

// offset converts the YAML parser's 1-based line and column (in
// characters) to a byte offset.
func (o offsets) offset(b []byte, line, col int) int {
	if line < 1 || line > len(o) {
		return len(b)
	}
	i := o[line-1]
	for c := 1; c < col && i < len(b) && b[i] != '\n'; c++ {
		_, size := utf8.DecodeRune(b[i:])
		i += size
	}
	return i
}

// position is the 1-based line and byte column of offset i.
func (o offsets) position(i int) (int, int) {
	line := 0
	for line+1 < len(o) && o[line+1] <= i {
		line++
	}
	return line + 1, i - o[line] + 1
}

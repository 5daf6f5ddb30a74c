package catalog

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

//go:embed templates/*.html templates/style.css
var files embed.FS

var pages = template.Must(template.New("").Funcs(template.FuncMap{
	"size":       size,
	"check":      checkValue,
	"join":       strings.Join,
	"short":      func(d string) string { return shortDigest(d) },
	"upper":      strings.ToUpper,
	"severities": severities,
	"root":       func(page string) string { return strings.Repeat("../", strings.Count(page, "/")) },
	"types":      types,
	"dict": func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	},
}).ParseFS(files, "templates/*.html"))

func shortDigest(d string) string {
	if len(d) > 19 {
		return d[:19]
	}
	return d
}

// severities is a scan's active findings by severity, most severe first,
// "none" when there are none.
func severities(m map[string]int) string {
	order := []string{"critical", "high", "medium", "low", "negligible", "unknown"}
	var parts []string
	for _, s := range order {
		if m[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", m[s], s))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// types is package counts by type: "12 deb, 30 pypi".
func types(m map[string]int) string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		name := k
		if name == "" {
			name = "other"
		}
		parts = append(parts, fmt.Sprintf("%d %s", m[k], name))
	}
	if len(parts) == 0 {
		return "no signed SBOM"
	}
	return strings.Join(parts, ", ")
}

// Write renders site into dir: index.html, one page per line
// (lines/NAME.html), style.css, and the same data as catalog.json and
// lines/NAME.json. The site is written to a temporary folder beside dir and
// swapped in, so a reader never sees a half-written site.
func Write(dir string, site *Site) error {
	parent := filepath.Dir(filepath.Clean(dir))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, ".catalog-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := render(tmp, site); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	old := ""
	if _, err := os.Stat(dir); err == nil {
		old = tmp + ".old"
		if err := os.Rename(dir, old); err != nil {
			return fmt.Errorf("replacing %s: %w", dir, err)
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		if old != "" {
			os.Rename(old, dir)
		}
		return fmt.Errorf("writing %s: %w", dir, err)
	}
	if old != "" {
		return os.RemoveAll(old)
	}
	return nil
}

func render(dir string, site *Site) error {
	if err := os.MkdirAll(filepath.Join(dir, "lines"), 0o755); err != nil {
		return err
	}
	css, err := files.ReadFile("templates/style.css")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "style.css"), css, 0o644); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(dir, "catalog.json"), site); err != nil {
		return err
	}
	if err := execute(filepath.Join(dir, "index.html"), "index.html", map[string]any{"Site": site, "Page": "index.html"}); err != nil {
		return err
	}
	for _, l := range site.Lines {
		if err := writeJSON(filepath.Join(dir, strings.TrimSuffix(l.Page, ".html")+".json"), l); err != nil {
			return err
		}
		if err := execute(filepath.Join(dir, l.Page), "line.html", map[string]any{"Site": site, "Line": l, "Page": l.Page,
			"JSON": filepath.Base(strings.TrimSuffix(l.Page, ".html") + ".json")}); err != nil {
			return err
		}
	}
	return nil
}

func execute(path, name string, data any) error {
	var buf bytes.Buffer
	if err := pages.ExecuteTemplate(&buf, name, data); err != nil {
		return fmt.Errorf("rendering %s: %w", path, err)
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

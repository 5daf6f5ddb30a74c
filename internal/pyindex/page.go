// Package pyindex reads Python package indexes, PEP 503 HTML pages and
// PEP 691 JSON pages alike, and serves a routed view of several of them
// (Proxy) on loopback for the lock's pip resolution: each project comes from
// exactly one index, and every wheel has PEP 658 metadata, read from the
// upstream's metadata file, from the wheel's zip directory by HTTP range
// requests, or from one full download, and cached by the wheel's sha256.
package pyindex

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"golang.org/x/net/html"

	"imagectl/internal/pep"
)

// File is one distribution file a project page lists.
type File struct {
	// Filename is the file's name, e.g. torch-2.6.0+cu124-cp311-cp311-linux_x86_64.whl.
	Filename string `json:"filename"`
	// URL is the file's absolute URL, without the hash fragment.
	URL string `json:"url"`
	// SHA256 is the hex sha256 the index gives for the file ("" when none).
	SHA256 string `json:"sha256,omitempty"`
	// RequiresPython is the file's Requires-Python ("" when the index gives none).
	RequiresPython string `json:"requires_python,omitempty"`
	// Yanked is true for a yanked file (PEP 592); YankedReason says why.
	Yanked       bool   `json:"yanked,omitempty"`
	YankedReason string `json:"yanked_reason,omitempty"`
	// Metadata says the index serves the core metadata at URL + ".metadata"
	// (PEP 658/714); MetadataSHA256 is its sha256 when the index gives one.
	Metadata       bool   `json:"metadata,omitempty"`
	MetadataSHA256 string `json:"metadata_sha256,omitempty"`
	// Size is the file's size when the index gives it (PEP 700), else 0.
	Size int64 `json:"size,omitempty"`
}

// ErrNotFound is returned for a project the index does not have.
var ErrNotFound = errors.New("project not found")

// PageError reports an index page that could not be read.
type PageError struct {
	URL    string
	Status int
	Err    error
}

func (e *PageError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("index page %s: HTTP %d", e.URL, e.Status)
	}
	return fmt.Sprintf("index page %s: %v", e.URL, e.Err)
}
func (e *PageError) Unwrap() error { return e.Err }

// accept asks for PEP 691 JSON and takes PEP 503 HTML (a plain web server
// answers text/html, or something else, whatever it is asked).
const accept = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01"

// ProjectURL is the page of project name under index (PEP 503: the
// normalized name and a trailing slash).
func ProjectURL(index, name string) string {
	return strings.TrimRight(index, "/") + "/" + pep.Normalize(name) + "/"
}

// fetchPage reads the project page of name on index: JSON when the server
// says so, else HTML. It returns the files and the bytes read.
func (c *client) fetchPage(ctx context.Context, index, name string) ([]File, int64, error) {
	u := ProjectURL(index, name)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, &PageError{URL: redactURL(u), Err: err}
	}
	req.Header.Set("Accept", accept)
	resp, err := c.do(req)
	if err != nil {
		return nil, 0, &PageError{URL: redactURL(u), Err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone {
		return nil, 0, fmt.Errorf("%s: %w", redactURL(u), ErrNotFound)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, 0, &PageError{URL: redactURL(u), Status: resp.StatusCode}
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, int64(len(b)), &PageError{URL: redactURL(u), Err: err}
	}
	base := resp.Request.URL // after redirects: relative links resolve against it
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	var files []File
	if mt == jsonType || (mt == "application/json" && bytes.HasPrefix(bytes.TrimSpace(b), []byte("{"))) {
		files, err = parseJSON(base, b)
	} else {
		files, err = parseHTML(base, b)
	}
	if err != nil {
		return nil, int64(len(b)), &PageError{URL: redactURL(u), Err: err}
	}
	return files, int64(len(b)), nil
}

const jsonType = "application/vnd.pypi.simple.v1+json"

// parseHTML reads a PEP 503 project page: every <a> is a file; its href
// (relative to the page) carries the hash as a fragment; data-* attributes
// carry Requires-Python, yanking and metadata (PEP 592, 658, 714).
func parseHTML(base *url.URL, b []byte) ([]File, error) {
	doc, err := html.Parse(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("parsing HTML: %w", err)
	}
	var files []File
	var walk func(n *html.Node) error
	walk = func(n *html.Node) error {
		if n.Type == html.ElementNode && n.Data == "a" {
			attrs := map[string]string{}
			has := map[string]bool{}
			for _, a := range n.Attr {
				attrs[a.Key], has[a.Key] = a.Val, true
			}
			if href, ok := attrs["href"]; ok {
				f, err := fileFromLink(base, href, text(n))
				if err != nil {
					return err
				}
				f.RequiresPython = attrs["data-requires-python"]
				if has["data-yanked"] {
					f.Yanked, f.YankedReason = true, attrs["data-yanked"]
				}
				for _, k := range []string{"data-core-metadata", "data-dist-info-metadata"} {
					if v, ok := attrs[k]; ok && v != "false" {
						f.Metadata = true
						if h, ok := strings.CutPrefix(v, "sha256="); ok {
							f.MetadataSHA256 = strings.ToLower(h)
						}
						break
					}
				}
				files = append(files, f)
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if err := walk(c); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(doc); err != nil {
		return nil, err
	}
	return files, nil
}

func text(n *html.Node) string {
	var b strings.Builder
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	}
	return strings.TrimSpace(b.String())
}

// fileFromLink makes a File from a link: the URL without its fragment, the
// sha256 from a "#sha256=..." fragment, the file name from the URL's path
// (the link text when the path has none).
func fileFromLink(base *url.URL, href, label string) (File, error) {
	ref, err := url.Parse(strings.TrimSpace(href))
	if err != nil {
		return File{}, fmt.Errorf("link %q: %w", href, err)
	}
	u := base.ResolveReference(ref)
	frag := u.Fragment
	u.Fragment, u.RawFragment = "", ""
	f := File{URL: u.String()}
	if algo, h, ok := strings.Cut(frag, "="); ok && strings.EqualFold(algo, "sha256") {
		f.SHA256 = strings.ToLower(h)
	}
	f.Filename = lastSegment(u)
	if f.Filename == "" {
		f.Filename = label
	}
	return f, nil
}

func lastSegment(u *url.URL) string {
	p := u.Path
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		p = p[i+1:]
	}
	return p
}

// parseJSON reads a PEP 691 project page.
func parseJSON(base *url.URL, b []byte) ([]File, error) {
	var page struct {
		Files []struct {
			Filename       string            `json:"filename"`
			URL            string            `json:"url"`
			Hashes         map[string]string `json:"hashes"`
			RequiresPython string            `json:"requires-python"`
			Yanked         json.RawMessage   `json:"yanked"`
			CoreMetadata   json.RawMessage   `json:"core-metadata"`
			DistInfo       json.RawMessage   `json:"dist-info-metadata"`
			Size           int64             `json:"size"`
		} `json:"files"`
	}
	if err := json.Unmarshal(b, &page); err != nil {
		return nil, fmt.Errorf("parsing PEP 691 JSON: %w", err)
	}
	var files []File
	for _, jf := range page.Files {
		f, err := fileFromLink(base, jf.URL, jf.Filename)
		if err != nil {
			return nil, err
		}
		if jf.Filename != "" {
			f.Filename = jf.Filename
		}
		if h := jf.Hashes["sha256"]; h != "" {
			f.SHA256 = strings.ToLower(h)
		}
		f.RequiresPython, f.Size = jf.RequiresPython, jf.Size
		f.Yanked, f.YankedReason = boolOrString(jf.Yanked)
		md := jf.CoreMetadata
		if len(md) == 0 {
			md = jf.DistInfo
		}
		f.Metadata, f.MetadataSHA256 = metadataField(md)
		files = append(files, f)
	}
	return files, nil
}

// boolOrString reads PEP 691's yanked: false, true or a reason string.
func boolOrString(raw json.RawMessage) (bool, string) {
	if len(raw) == 0 {
		return false, ""
	}
	var b bool
	if json.Unmarshal(raw, &b) == nil {
		return b, ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return true, s
	}
	return false, ""
}

// metadataField reads PEP 691's core-metadata: false, true or {"sha256": ...}.
func metadataField(raw json.RawMessage) (bool, string) {
	if len(raw) == 0 {
		return false, ""
	}
	var b bool
	if json.Unmarshal(raw, &b) == nil {
		return b, ""
	}
	var h map[string]string
	if json.Unmarshal(raw, &h) == nil {
		return true, strings.ToLower(h["sha256"])
	}
	return false, ""
}

// redactURL drops user info from a URL for messages.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	u.User = nil
	return u.String()
}

package pep

import (
	"bytes"
	"html"
)

// Page is a PEP 503 simple-repository page: the root's list of projects or
// one project's list of files.
type Page struct {
	// RepositoryVersion is the PEP 629 pypi:repository-version the page
	// declares ("1.0", "1.1"). The default, "", writes no <head>: the shape
	// of a directory listing behind a plain web server.
	RepositoryVersion string
	// Title is the page's <title> (with a RepositoryVersion) and its <h1>.
	// The default, "", writes neither.
	Title string
	// Links are the anchors, in order.
	Links []Link
}

// Link is one anchor of a Page.
type Link struct {
	// Href is the link target as given: a relative or absolute URL with,
	// for a file, its #sha256= fragment. It is HTML-escaped on writing.
	Href string
	// Text is the anchor text: the project name or the file name.
	Text string
	// RequiresPython is written as data-requires-python when set (PEP 503).
	RequiresPython string
	// Yanked writes data-yanked with YankedReason as its value (PEP 592).
	Yanked       bool
	YankedReason string
	// CoreMetadata is written as data-core-metadata and, for pip before
	// 23.2, data-dist-info-metadata when set: "true" or "sha256=HEX" (PEP
	// 658, PEP 714).
	CoreMetadata string
}

// Bytes renders p: each anchor on a line of its own, attribute values
// escaped, the same bytes for the same page.
func (p Page) Bytes() []byte {
	var b bytes.Buffer
	b.WriteString("<!DOCTYPE html>\n<html>\n")
	if p.RepositoryVersion != "" {
		b.WriteString(`<head><meta name="pypi:repository-version" content="` + html.EscapeString(p.RepositoryVersion) + `">`)
		if p.Title != "" {
			b.WriteString("<title>" + html.EscapeString(p.Title) + "</title>")
		}
		b.WriteString("</head>\n")
	}
	b.WriteString("<body>\n")
	if p.Title != "" {
		b.WriteString("<h1>" + html.EscapeString(p.Title) + "</h1>\n")
	}
	for _, l := range p.Links {
		b.WriteString(`<a href="` + html.EscapeString(l.Href) + `"`)
		if l.RequiresPython != "" {
			b.WriteString(` data-requires-python="` + html.EscapeString(l.RequiresPython) + `"`)
		}
		if l.Yanked {
			b.WriteString(` data-yanked="` + html.EscapeString(l.YankedReason) + `"`)
		}
		if l.CoreMetadata != "" {
			md := html.EscapeString(l.CoreMetadata)
			b.WriteString(` data-core-metadata="` + md + `" data-dist-info-metadata="` + md + `"`)
		}
		b.WriteString(">" + html.EscapeString(l.Text) + "</a><br/>\n")
	}
	b.WriteString("</body>\n</html>\n")
	return b.Bytes()
}

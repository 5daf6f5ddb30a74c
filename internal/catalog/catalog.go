// Package catalog builds the static site users browse: each image line of
// the platform, its releases (tags, digest, month, support end) with a
// copyable pin line, contents, size per platform, the CVE status of the
// newest signed scan, the GPU verification and the changelog, read from
// the registry (every fact verified under the platform's public keys) and,
// when given, the release files. Plain HTML and CSS, no JavaScript, and the
// same data as JSON.
package catalog

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"imagectl/internal/discover"
	"imagectl/internal/releasefile"
	"imagectl/internal/scan/report"
)

// Site is the catalog's data: what catalog.json holds and the pages show.
type Site struct {
	Generated string `json:"generated"`
	Lines     []Line `json:"lines"`
}

// Line is one image line: a release repository.
type Line struct {
	Name       string `json:"name"`
	Repository string `json:"repository"`
	// Page is the line's page, relative to the site's root.
	Page     string  `json:"page"`
	Releases []Entry `json:"releases"`
}

// Latest is the newest verified release, or nil.
func (l Line) Latest() *Entry {
	for i := range l.Releases {
		if l.Releases[i].Verified && l.Releases[i].Month != "" {
			return &l.Releases[i]
		}
	}
	return nil
}

// Entry is one release of a line.
type Entry struct {
	discover.Release
	// Anchor is its fragment on the line's page.
	Anchor string `json:"anchor"`
	// SupportEnd and SupportState (supported, ending, expired; empty
	// without a window), from the signed support attestation or the
	// release file.
	SupportEnd   string `json:"support_end,omitempty"`
	SupportState string `json:"support_state,omitempty"`
	// Pin is the command that pins it; PinRef what the pin prints.
	Pin    string `json:"pin"`
	PinRef string `json:"pin_ref"`
	// Images are its platforms' images: size, packages, scan, verification.
	Images []discover.PlatformDetails `json:"images"`
	// Changes is what changed since the previous release; nil for the first.
	Changes *Changes `json:"changes,omitempty"`
}

// Changes is the changelog entry of a release: discover.Compare with the
// release before it.
type Changes struct {
	Since      string                   `json:"since"`
	Summary    string                   `json:"summary"`
	Changed    []discover.PackageChange `json:"changed,omitempty"`
	Added      []discover.Package       `json:"added,omitempty"`
	Removed    []discover.Package       `json:"removed,omitempty"`
	Fixed      []report.Finding         `json:"fixed,omitempty"`
	Introduced []report.Finding         `json:"introduced,omitempty"`
	// Error says why there is no comparison (an unsigned release).
	Error string `json:"error,omitempty"`
}

// Option configures Build.
type Option func(*options) error

type options struct {
	discover     []discover.Option
	releaseFiles []*releasefile.File
	now          func() time.Time
}

// WithDiscoverOptions passes keys and access to every registry read. The
// default is none: no keys, so nothing verifies.
func WithDiscoverOptions(opts ...discover.Option) Option {
	return func(o *options) error { o.discover = append(o.discover, opts...); return nil }
}

// WithReleaseFiles adds the release files of the platform's git
// (images/*/releases.json under dir): their image names and support ends
// fill what the registry lacks. The default is the registry alone.
func WithReleaseFiles(dir string) Option {
	return func(o *options) error {
		paths, err := filepath.Glob(filepath.Join(dir, "*", releasefile.FileName))
		if err != nil {
			return err
		}
		for _, p := range paths {
			f, err := releasefile.ReadFile(p)
			if err != nil {
				return err
			}
			o.releaseFiles = append(o.releaseFiles, f)
		}
		return nil
	}
}

var slugRE = regexp.MustCompile(`[^a-z0-9._-]+`)

// Build reads each repository's releases from the registry and what their
// signed attestations say.
func Build(ctx context.Context, repos []name.Repository, opts ...Option) (*Site, error) {
	o := &options{now: time.Now}
	for _, opt := range opts {
		if err := opt(o); err != nil {
			return nil, err
		}
	}
	site := &Site{Generated: o.now().UTC().Format(time.RFC3339)}
	for _, repo := range repos {
		l, err := o.line(ctx, repo)
		if err != nil {
			return nil, err
		}
		site.Lines = append(site.Lines, *l)
	}
	return site, nil
}

func (o *options) line(ctx context.Context, repo name.Repository) (*Line, error) {
	rs, err := discover.Releases(ctx, repo, o.discover...)
	if err != nil {
		return nil, err
	}
	l := &Line{Name: path.Base(repo.RepositoryStr()), Repository: repo.Name()}
	var rf *releasefile.File
	for _, f := range o.releaseFiles {
		if f.Repository == repo.Name() {
			rf = f
			l.Name = f.Image
		}
	}
	for _, r := range rs {
		if r.Lock != nil && r.Lock.Name != "" && rf == nil {
			l.Name = r.Lock.Name
			break
		}
	}
	l.Page = "lines/" + slugRE.ReplaceAllString(strings.ToLower(l.Name), "-") + ".html"
	for _, r := range rs {
		e := Entry{Release: r, PinRef: r.Ref, Anchor: "release-" + slugRE.ReplaceAllString(r.Tag(), "-")}
		e.Pin = "imagectl pin " + repo.Name() + ":" + r.Tag()
		if r.Support != nil {
			e.SupportEnd = r.Support.End
		} else if rf != nil {
			for _, fr := range rf.Releases {
				if d, err := fr.Digest(); err == nil && d.DigestStr() == r.Digest {
					e.SupportEnd = fr.SupportEnd
				}
			}
		}
		if e.SupportEnd != "" {
			s := discover.Support{End: e.SupportEnd}
			e.SupportState = s.State(o.now())
		}
		platform := ""
		if len(r.Platforms) == 1 {
			platform = r.Platforms[0]
		}
		if e.Images, err = discover.Details(ctx, repo.Digest(r.Digest), platform, o.discover...); err != nil {
			return nil, err
		}
		l.Releases = append(l.Releases, e)
	}
	// The changelog: each release against the one before it (newest first).
	for i := 0; i+1 < len(l.Releases); i++ {
		cur, prev := &l.Releases[i], &l.Releases[i+1]
		c := &Changes{Since: prev.Tag()}
		d, err := discover.Compare(ctx, repo.Digest(prev.Digest), repo.Digest(cur.Digest), o.discover...)
		if err != nil {
			c.Error = err.Error()
		} else {
			c.Summary = d.Summary()
			c.Changed, c.Added, c.Removed, c.Fixed, c.Introduced = d.Changed, d.Added, d.Removed, d.Fixed, d.Introduced
		}
		cur.Changes = c
	}
	return l, nil
}

// Sizes formats bytes for the pages.
func size(n int64) string { return discover.Bytes(n) }

// checkValue is a verification check's value for the pages: "pass 12.3"
// or "-".
func checkValue(v *discover.Verification, name string) string {
	if v == nil {
		return "-"
	}
	c := v.Check(name)
	if c == nil {
		return "-"
	}
	s := string(c.Status)
	if c.Value != "" {
		s += ": " + c.Value
	} else if c.Seconds > 0 {
		s += fmt.Sprintf(": %.1f s", c.Seconds)
	}
	return s
}

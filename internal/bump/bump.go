// Package bump moves the digest pins of a platform's release repositories
// in a user's files (Dockerfiles, Kubernetes and compose YAML, GitHub
// Actions workflows, plain text) to the newest release of the same line
// that passes pin's gates. Files are rewritten byte for byte only at the
// references' offsets, so formatting and comments stay as they are.
package bump

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"imagectl/internal/atomicfile"
)

// Target is the release a line's pins should point at.
type Target struct {
	// Digest is repository@sha256:... of the newest release that passes
	// pin's gates.
	Digest name.Digest
	// Tag is its newest release tag (IMAGE-YYYY.MM), Month its month.
	Tag   string
	Month string
	// Newer reports whether digest d (a current pin) is older than the
	// target: a pin of a newer (or unknown-newer) digest is left alone.
	Newer func(d string) bool
}

// Resolver finds a line's target: discover.Resolver over the registry,
// a fake in tests.
type Resolver interface {
	// Target returns the newest release of repo that passes pin's gates,
	// or a *StuckError saying why there is none.
	Target(ctx context.Context, repo name.Repository) (*Target, error)
}

// StuckError is a line whose pins cannot be bumped: no release passes
// the gates, or the newest one is out of support.
type StuckError struct {
	Repository string
	Reason     string
}

func (e *StuckError) Error() string { return e.Repository + ": " + e.Reason }

// Change is one pin moved (or, in a dry run, to be moved).
type Change struct {
	Pin
	NewRef    string `json:"new_ref"`
	NewDigest string `json:"new_digest"`
	NewTag    string `json:"new_tag"`
	Month     string `json:"month"`
}

// Stuck is one pin that cannot be bumped and why.
type Stuck struct {
	Pin
	Reason string `json:"reason"`
}

// Result is what Run found and did.
type Result struct {
	Changes []Change `json:"changes"`
	Stuck   []Stuck  `json:"stuck"`
	// Current are the pins already at their line's newest release.
	Current []Pin `json:"current"`
	// Files are the files rewritten (or, in a dry run, to be rewritten).
	Files []string `json:"files"`
	// Skipped are files found in a folder that could not be parsed (a Helm
	// template is not YAML), each with the parser's error: left alone.
	Skipped []string `json:"skipped,omitempty"`
	DryRun  bool     `json:"dry_run"`
}

// Option configures Run.
type Option func(*options) error

type options struct {
	repos  []string
	dryRun bool
}

// WithRepositories names the platform's release repositories
// (registry/path) or prefixes of them (registry/path/): only pins of
// these move. The default is none, which Run refuses: a user's files pin
// many images, and only the platform's are bumped.
func WithRepositories(repos ...string) Option {
	return func(o *options) error {
		for _, r := range repos {
			if r == "" {
				return errors.New("repository is empty")
			}
		}
		o.repos = append(o.repos, repos...)
		return nil
	}
}

// WithDryRun reports the changes without writing. The default is false.
func WithDryRun(dry bool) Option {
	return func(o *options) error { o.dryRun = dry; return nil }
}

func (o *options) platform(repo string) bool {
	for _, r := range o.repos {
		r = strings.TrimSuffix(r, "/")
		if repo == r || strings.HasPrefix(repo, r+"/") {
			return true
		}
	}
	return false
}

// Run finds the pins under paths (files, or folders walked for
// Dockerfiles, YAML and *.txt/*.env files; .git and vendor skipped), and
// moves each pin of the platform's repositories to its line's Target.
func Run(ctx context.Context, paths []string, res Resolver, opts ...Option) (*Result, error) {
	o := &options{}
	for _, opt := range opts {
		if err := opt(o); err != nil {
			return nil, err
		}
	}
	if len(o.repos) == 0 {
		return nil, errors.New("bump: no release repository named (--repo)")
	}
	files, walked, err := collect(paths)
	if err != nil {
		return nil, err
	}
	result := &Result{DryRun: o.dryRun, Changes: []Change{}, Stuck: []Stuck{}, Current: []Pin{}, Files: []string{}}
	targets := map[string]*Target{}
	stuck := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("bump: %w", err)
		}
		pins, err := Find(f, KindOf(f), b)
		if err != nil && walked[f] {
			result.Skipped = append(result.Skipped, err.Error())
			continue
		} else if err != nil {
			return nil, fmt.Errorf("bump: %w", err)
		}
		var edits []Change
		for _, p := range pins {
			if !o.platform(p.Repository) {
				continue
			}
			t, ok := targets[p.Repository]
			why, isStuck := stuck[p.Repository]
			if !ok && !isStuck {
				repo, err := name.NewRepository(p.Repository, name.StrictValidation)
				if err != nil {
					return nil, err
				}
				t, err = res.Target(ctx, repo)
				var se *StuckError
				switch {
				case errors.As(err, &se):
					why, isStuck = se.Reason, true
					stuck[p.Repository] = why
				case err != nil:
					return nil, err
				default:
					targets[p.Repository] = t
				}
			}
			if isStuck {
				result.Stuck = append(result.Stuck, Stuck{Pin: p, Reason: why})
				continue
			}
			if p.Digest == t.Digest.DigestStr() || (t.Newer != nil && !t.Newer(p.Digest)) {
				result.Current = append(result.Current, p)
				continue
			}
			edits = append(edits, change(p, t))
		}
		if len(edits) == 0 {
			continue
		}
		result.Changes = append(result.Changes, edits...)
		result.Files = append(result.Files, f)
		if o.dryRun {
			continue
		}
		if err := rewrite(f, b, edits); err != nil {
			return nil, err
		}
	}
	return result, nil
}

// change is p moved to t: the digest replaced; a release tag written with
// the reference replaced by t's tag, a moving tag kept.
func change(p Pin, t *Target) Change {
	c := Change{Pin: p, NewDigest: t.Digest.DigestStr(), NewTag: t.Tag, Month: t.Month}
	at := strings.LastIndex(p.Ref, "@")
	repoTag := p.Ref[:at]
	if p.Tag != "" && releaseTag(p.Tag) && t.Tag != "" {
		repoTag = strings.TrimSuffix(repoTag, p.Tag) + t.Tag
	}
	c.NewRef = repoTag + "@" + c.NewDigest
	return c
}

// releaseTag reports whether tag is an immutable release tag (ends in
// -YYYY.MM or -YYYY.MM.N).
func releaseTag(tag string) bool {
	parts := strings.Split(tag, "-")
	last := parts[len(parts)-1]
	f := strings.Split(last, ".")
	if len(parts) < 2 || len(f) < 2 || len(f) > 3 || len(f[0]) != 4 || len(f[1]) != 2 {
		return false
	}
	for _, s := range f {
		for _, r := range s {
			if r < '0' || r > '9' {
				return false
			}
		}
	}
	return true
}

// rewrite replaces each change's reference in b and writes the file
// atomically with its mode kept.
func rewrite(path string, b []byte, edits []Change) error {
	sort.Slice(edits, func(i, j int) bool { return edits[i].start > edits[j].start })
	out := append([]byte(nil), b...)
	for _, e := range edits {
		if string(out[e.start:e.end]) != e.Ref {
			return fmt.Errorf("bump: %s:%d: the reference moved while bumping", path, e.Line)
		}
		out = append(out[:e.start], append([]byte(e.NewRef), out[e.end:]...)...)
	}
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("bump: %w", err)
	}
	if err := atomicfile.Write(path, out, st.Mode().Perm()); err != nil {
		return fmt.Errorf("bump: writing %s: %w", path, err)
	}
	return nil
}

// textFile: plain-text files a folder walk reads besides Dockerfiles and
// YAML.
func textFile(path string) bool {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".txt", ".env", ".pins", ".hcl", ".tf":
		return true
	}
	return false
}

// collect expands paths: files as given, folders walked (walked marks
// the files a walk found).
func collect(paths []string) ([]string, map[string]bool, error) {
	var out []string
	seen := map[string]bool{}
	walked := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, nil, fmt.Errorf("bump: %w", err)
		}
		if !st.IsDir() {
			add(p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path != p && (d.Name() == ".git" || d.Name() == "vendor" || d.Name() == "node_modules") {
					return filepath.SkipDir
				}
				return nil
			}
			if !d.Type().IsRegular() {
				return nil
			}
			if k := KindOf(path); k != KindText || textFile(path) {
				if !seen[path] {
					walked[path] = true
				}
				add(path)
			}
			return nil
		})
		if err != nil {
			return nil, nil, fmt.Errorf("bump: %w", err)
		}
	}
	return out, walked, nil
}

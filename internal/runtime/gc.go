package runtime

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// GCResult says what a cache collection removed.
type GCResult struct {
	Scanned      int   `json:"scanned"`
	Removed      int   `json:"removed"`
	RemovedBytes int64 `json:"removed_bytes"`
	KeptBytes    int64 `json:"kept_bytes"`
}

type gcEntry struct {
	root  string
	path  string
	size  int64
	mtime time.Time
}

// CollectCaches trims the compile caches under roots: files not modified for
// longer than maxAge go first, then the oldest files until the total is at
// most maxBytes. Only files and symlinks inside the roots are removed (links
// are never followed), then directories emptied by the removal; the roots
// themselves stay, and so does anything modified after notAfter (files the
// running workload writes). A zero maxAge or maxBytes disables that rule.
func CollectCaches(ctx context.Context, roots []string, maxAge time.Duration, maxBytes int64, notAfter time.Time) (GCResult, error) {
	var r GCResult
	if maxAge <= 0 && maxBytes <= 0 {
		return r, nil
	}
	var entries []gcEntry
	var total int64
	for _, root := range roots {
		root = filepath.Clean(root)
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil // unreadable parts are skipped, not fatal
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if d.IsDir() {
				return nil
			}
			fi, err := d.Info()
			if err != nil {
				return nil
			}
			r.Scanned++
			total += fi.Size()
			entries = append(entries, gcEntry{root: root, path: p, size: fi.Size(), mtime: fi.ModTime()})
			return nil
		})
		if err != nil && ctx.Err() != nil {
			return r, ctx.Err()
		}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].mtime.Before(entries[j].mtime) })
	emptied := map[string]bool{}
	remove := func(e gcEntry) {
		if err := os.Remove(e.path); err == nil {
			for d := filepath.Dir(e.path); d != e.root && len(d) > len(e.root); d = filepath.Dir(d) {
				emptied[d] = true
			}
			r.Removed++
			r.RemovedBytes += e.size
			total -= e.size
		}
	}
	for _, e := range entries {
		if e.mtime.After(notAfter) {
			continue
		}
		if maxAge > 0 && notAfter.Sub(e.mtime) > maxAge {
			remove(e)
		} else if maxBytes > 0 && total > maxBytes {
			remove(e)
		}
	}
	// Directories that held removed files, deepest first so parents empty
	// out after their children; Remove fails harmlessly on directories that
	// still hold something.
	if len(emptied) > 0 {
		ds := make([]string, 0, len(emptied))
		for d := range emptied {
			ds = append(ds, d)
		}
		sort.Slice(ds, func(i, j int) bool { return len(ds[i]) > len(ds[j]) })
		for _, d := range ds {
			_ = os.Remove(d)
		}
	}
	r.KeptBytes = total
	return r, nil
}

// gcRoots are the compile caches the GC looks at: the configured ones (not
// those the platform pointed elsewhere through the environment: those are
// not the image's to trim) and torch's default /tmp/torchinductor_<user>
// directories (under /tmp and under TMPDIR when that differs).
func gcRoots(dirs []CacheDir, tmps ...string) []string {
	var roots []string
	seen := map[string]bool{}
	add := func(p string) {
		if p != "" && !seen[p] {
			seen[p] = true
			roots = append(roots, p)
		}
	}
	for _, d := range dirs {
		if d.Compile && !d.FromEnv {
			add(d.Path)
		}
	}
	for _, t := range tmps {
		if t == "" {
			continue
		}
		m, _ := filepath.Glob(filepath.Join(t, "torchinductor_*"))
		for _, p := range m {
			if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
				add(p)
			}
		}
	}
	return roots
}

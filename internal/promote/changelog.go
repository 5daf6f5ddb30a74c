package promote

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"imagectl/internal/lock"
	"imagectl/internal/releasefile"
)

// Changelog renders the changelog of the release tag of l in month: the
// lock diff against old, the lock of the previous release prev, one
// section per platform (each platform's image has its own base, debs and
// wheels; a single-platform lock has one). prev and old are nil for a
// first release.
func Changelog(tag, month string, l *lock.Lock, prev *releasefile.Release, old *lock.Lock) ([]byte, error) {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# %s (%s)\n\n", tag, month)
	switch {
	case prev == nil:
		fmt.Fprintf(&buf, "First release.\n")
		old = nil
	case old == nil:
		return nil, fmt.Errorf("changelog of %s: the lock of the previous release %s is missing", tag, prev.Source)
	default:
		fmt.Fprintf(&buf, "Changes since %s (%s, %s):\n", strings.Join(prev.Tags, ", "), prev.Month, prev.Source)
	}
	for _, p := range l.PlatformNames() {
		view, err := l.ForPlatform(p)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&buf, "\n## %s\n\n", p)
		if old == nil {
			fmt.Fprintf(&buf, "%d debs, %d wheels.\n", len(view.Apt), len(view.Pip))
			continue
		}
		ov, err := old.ForPlatform(p)
		if err != nil {
			fmt.Fprintf(&buf, "New platform: %d debs, %d wheels.\n", len(view.Apt), len(view.Pip))
			continue
		}
		if err := lock.Diff(ov, view).WriteText(&buf); err != nil {
			return nil, err
		}
	}
	if old != nil {
		for _, p := range old.PlatformNames() {
			if !slices.Contains(l.PlatformNames(), p) {
				fmt.Fprintf(&buf, "\n## %s\n\nPlatform dropped: this release has no %s image.\n", p, p)
			}
		}
	}
	return buf.Bytes(), nil
}

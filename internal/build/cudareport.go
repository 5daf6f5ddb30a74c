package build

import (
	"sort"
	"sync"

	"imagectl/internal/compat"
)

// CUDADuplicate is one CUDA library a built image holds twice, as
// `imagectl build -o json` reports it: the platform image it is in, the
// library, the installed deb that brings it (with dpkg's Installed-Size in
// bytes) and the lock's wheel that brings it again (the wheel file's bytes).
// See docs/build.md ("CUDA shipped twice").
type CUDADuplicate struct {
	Platform string `json:"platform"`
	compat.CUDADuplicate
}

// cudaFindings holds what the CUDA-shipped-twice check of one platform's
// solve found; the solve (run in its own goroutine for an index) writes it,
// the result reads it.
type cudaFindings struct {
	mu       sync.Mutex
	platform string
	dups     []compat.CUDADuplicate
}

// set records the duplicates found for platform. A solve that runs its
// build function again replaces what it found before.
func (f *cudaFindings) set(platform string, dups []compat.CUDADuplicate) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.platform, f.dups = platform, dups
}

// cudaDuplicatesOf gathers every target's findings, by platform in the
// lock's order and then by library; nil when no image holds a library twice.
func cudaDuplicatesOf(targets []buildTarget) []CUDADuplicate {
	var out []CUDADuplicate
	for _, t := range targets {
		if t.cuda == nil {
			continue
		}
		t.cuda.mu.Lock()
		dups := append([]compat.CUDADuplicate(nil), t.cuda.dups...)
		platform := t.cuda.platform
		t.cuda.mu.Unlock()
		sort.Slice(dups, func(i, j int) bool { return dups[i].Library < dups[j].Library })
		for _, d := range dups {
			out = append(out, CUDADuplicate{Platform: platform, CUDADuplicate: d})
		}
	}
	return out
}

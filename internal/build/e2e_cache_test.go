package build

import (
	"context"
	"strings"
	"testing"

	"github.com/moby/buildkit/client"
)

// TestE2ERegistryCache exports the build cache to the registry, empties
// buildkitd's cache, and checks that a build importing it runs none of the
// install steps again and gives the same digest.
func TestE2ERegistryCache(t *testing.T) {
	e := getE2E(t)
	ctx := context.Background()
	repo := uniq("cache")
	l := e.lock(t, repo, "1.0.0", smallCore)
	ref := e.env.Registry + "/imagectl/cache/" + repo + ":main"
	first, err := Solve(ctx, e.c, l, WithInit(e.init), WithPush(true), WithCacheTo("type=registry,mode=max,ref="+ref))
	if err != nil {
		t.Fatalf("build with --cache-to: %v", err)
	}
	prune(t, e.c)

	ch := make(chan *client.SolveStatus)
	steps := map[string]bool{} // install step name -> cached
	done := make(chan struct{})
	go func() {
		for s := range ch {
			for _, v := range s.Vertexes {
				if strings.HasPrefix(v.Name, "[") && v.Completed != nil {
					steps[v.Name] = v.Cached
				}
			}
		}
		close(done)
	}()
	second, err := Solve(ctx, e.c, l, WithInit(e.init), WithPush(true), WithCacheFrom("type=registry,ref="+ref), WithStatus(ch))
	<-done
	if err != nil {
		t.Fatalf("build with --cache-from: %v", err)
	}
	if len(steps) == 0 {
		t.Fatal("no install steps seen in the progress")
	}
	for name, cached := range steps {
		// The scratch file states hold the init binary and the runtime
		// config: made from the definition, nothing to import.
		if !cached && !strings.HasPrefix(name, "[init] files") && !strings.HasPrefix(name, "[runtime] files") {
			t.Errorf("step %q ran again despite the imported cache", name)
		}
	}
	if first.Digest != second.Digest {
		t.Errorf("digest from the imported cache %s, want %s", second.Digest, first.Digest)
	}
	t.Logf("steps from the registry cache: %v", steps)
}

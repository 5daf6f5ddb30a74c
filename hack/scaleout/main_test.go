package main

import (
	"math"
	"testing"
)

// TestSimulate checks the model's invariants: one node is the lone node's
// time whatever the way; the registry alone serves N copies and slows with
// N; a cache and piece-level peer-to-peer serve about one copy; a swarm
// keeps the last node near the lone node's time.
func TestSimulate(t *testing.T) {
	p := params{imageBytes: 3.8e9, layers: 22, registryBps: 10e9 / 8, nicBps: 25e9 / 8, unpackBps: 180e6,
		cacheBps: 25e9 / 8, pieceBytes: 4 << 20, stepSeconds: 0.5, startSeconds: 6.6}
	p.nodes = 1
	lone := simulate(p, "registry").lastReady
	if lone < 21 || lone > 30 {
		t.Fatalf("one node: %.1f s, want the unpack-bound ~28 s", lone)
	}
	for _, way := range []string{"cache", "p2p-layer", "p2p-piece"} {
		if got := simulate(p, way).lastReady; math.Abs(got-lone) > 1 {
			t.Errorf("one node, %s: %.1f s, want %.1f s as from the registry", way, got, lone)
		}
	}
	p.nodes = 64
	reg := simulate(p, "registry")
	if math.Abs(reg.registryBytes-64*3.8e9) > 1e8 || reg.lastReady < 3*lone {
		t.Errorf("64 nodes from the registry: %.0f s, %.1f GB egress; want 64 copies and several times slower", reg.lastReady, reg.registryBytes/1e9)
	}
	for _, way := range []string{"cache", "p2p-piece"} {
		o := simulate(p, way)
		if o.registryBytes > 1.1*3.8e9 || o.lastReady >= reg.lastReady {
			t.Errorf("64 nodes, %s: %.0f s, %.1f GB egress; want about one copy and sooner than the registry's %.0f s", way, o.lastReady, o.registryBytes/1e9, reg.lastReady)
		}
	}
	if o := simulate(p, "p2p-piece"); o.lastReady > lone+2 {
		t.Errorf("64 nodes, p2p-piece: %.0f s, want near the lone node's %.0f s", o.lastReady, lone)
	}
}

// Command scaleout simulates release day: N GPU nodes pulling the month's
// image at once, and prints, for each way of distributing it, the time to
// the last node ready and the bytes the registry served (its egress). It is
// a fluid model stepped in time (docs/scale-out.md says what it leaves
// out), fed with figures measured on the GPU machine:
//
//	go run ./hack/scaleout                       # the table docs/scale-out.md shows
//	go run ./hack/scaleout -nodes 8,64 -image-gb 3.8 -registry-gbps 10 -nic-gbps 25
//
// Ways: "registry" (every node from the registry), "cache" (an in-cluster
// pull-through cache: one pull from the registry, nodes from the cache),
// "p2p-layer" (Spegel: a node serves a layer to its peers once it holds the
// whole layer; the rest from the registry) and "p2p-piece" (Dragonfly: 4 MiB
// pieces, a node serves what it holds at once).
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
)

type params struct {
	nodes        int
	imageBytes   float64
	layers       int
	registryBps  float64 // registry (or its CDN) egress, bytes/s
	nicBps       float64 // each node's NIC, both ways
	unpackBps    float64 // each node's unpack rate (pipelined with the download)
	cacheBps     float64 // the pull-through cache's egress
	pieceBytes   float64
	stepSeconds  float64
	startSeconds float64 // container start, import, first step: added to "ready"
	stagger      float64 // node i starts pulling at i*stagger/nodes seconds
}

type outcome struct {
	lastReady, firstReady float64
	registryBytes         float64
}

// simulate steps the fluid model until every node holds and has unpacked
// the image.
func simulate(p params, way string) outcome {
	n := p.nodes
	layer := p.imageBytes / float64(p.layers)
	have := make([][]float64, n) // bytes of each layer each node holds
	for i := range have {
		have[i] = make([]float64, p.layers)
	}
	unpacked := make([]float64, n)
	ready := make([]float64, n)
	var cacheHave, regBytes, union float64
	for i := range ready {
		ready[i] = -1
	}
	total := func(i int) float64 {
		s := 0.0
		for _, b := range have[i] {
			s += b
		}
		return s
	}
	for t := 0.0; ; t += p.stepSeconds {
		dt := p.stepSeconds
		// want[i]: the next layer node i lacks (layers come in order, as
		// containerd fetches them a few at a time).
		active := []int{}
		for i := range n {
			if total(i) < p.imageBytes-1 && t >= float64(i)*p.stagger/float64(n) {
				active = append(active, i)
			}
		}
		switch way {
		case "registry":
			for _, i := range active {
				rate := math.Min(p.nicBps, p.registryBps/float64(len(active)))
				regBytes += fill(have[i], layer, rate*dt)
			}
		case "cache":
			if cacheHave < p.imageBytes {
				got := math.Min(p.registryBps*dt, p.imageBytes-cacheHave)
				cacheHave += got
				regBytes += got
			}
			for _, i := range active {
				rate := math.Min(p.nicBps, p.cacheBps/float64(len(active)))
				room := cacheHave - total(i)
				fill(have[i], layer, math.Min(rate*dt, math.Max(room, 0)))
			}
		case "p2p-piece":
			// Dragonfly: the nodes fetch different pieces from the
			// registry, so what the swarm holds (union) grows at the
			// registry's rate, and each node takes from its peers any
			// piece of the union it lacks; the peers' upload (every
			// node's NIC) is shared by the nodes still pulling.
			if union < p.imageBytes {
				got := math.Min(p.registryBps*dt, p.imageBytes-union)
				union += got
				regBytes += got
			}
			pool := float64(n) * p.nicBps * dt
			for _, i := range active {
				x := math.Min(math.Min(p.nicBps*dt, union-total(i)), pool/float64(len(active)))
				fill(have[i], layer, math.Max(x, 0))
			}
		case "p2p-layer":
			// Spegel: a layer can come from a peer once some node holds
			// it whole (containerd's content store); until then from the
			// registry, shared by the nodes asking. Peers' upload is
			// every holder's NIC, shared by the nodes that need the layer.
			held := make([]int, p.layers) // nodes holding layer l whole
			for i := range n {
				for l, b := range have[i] {
					if b >= layer-1 {
						held[l]++
					}
				}
			}
			regLeft := p.registryBps * dt
			asking := 0
			for _, i := range active {
				if l := next(have[i], layer); l >= 0 && held[l] == 0 {
					asking++
				}
			}
			for _, i := range active {
				l := next(have[i], layer)
				if l < 0 {
					continue
				}
				if held[l] > 0 {
					fill(have[i], layer, math.Min(p.nicBps*dt, float64(held[l])*p.nicBps*dt/float64(len(active))))
					continue
				}
				x := math.Min(p.nicBps*dt, regLeft/float64(asking))
				regBytes += fill(have[i], layer, x)
			}
		default:
			panic(way)
		}
		done := true
		for i := range n {
			unpacked[i] = math.Min(total(i), unpacked[i]+p.unpackBps*dt)
			if ready[i] < 0 && unpacked[i] >= p.imageBytes-1 {
				ready[i] = t + dt + p.startSeconds
			}
			done = done && ready[i] >= 0
		}
		if done || t > 24*3600 {
			break
		}
	}
	o := outcome{firstReady: math.Inf(1), registryBytes: regBytes}
	for _, r := range ready {
		o.lastReady = math.Max(o.lastReady, r)
		o.firstReady = math.Min(o.firstReady, r)
	}
	return o
}

// next is the first layer have lacks, or -1.
func next(have []float64, layer float64) int {
	for l, b := range have {
		if b < layer-1 {
			return l
		}
	}
	return -1
}

// fill adds up to b bytes to the first layers that lack them; returns what
// it added.
func fill(have []float64, layer, b float64) float64 {
	added := 0.0
	for l := range have {
		if b <= 0 {
			break
		}
		x := math.Min(layer-have[l], b)
		if x > 0 {
			have[l] += x
			b -= x
			added += x
		}
	}
	return added
}

func main() {
	nodes := flag.String("nodes", "1,8,32,128,512", "node counts, comma-separated")
	imageGB := flag.Float64("image-gb", 3.8, "compressed image size, GB (the torch image's zstd: 3.80)")
	layers := flag.Int("layers", 22, "layers")
	regGbps := flag.Float64("registry-gbps", 10, "registry egress, Gbit/s")
	nicGbps := flag.Float64("nic-gbps", 25, "each node's NIC, Gbit/s")
	unpackMBps := flag.Float64("unpack-mbps", 180, "each node's unpack rate, MB/s (H200 machine: 3.80 GB pulled and unpacked in 21 s from loopback)")
	cacheGbps := flag.Float64("cache-gbps", 25, "the pull-through cache's egress, Gbit/s")
	stagger := flag.Float64("stagger-seconds", 0, "the nodes start pulling spread evenly over this many seconds (0: all at once)")
	start := flag.Float64("start-seconds", 6.6, "container start, import torch and the first matmul, s (H200 machine: 27.7 - 21.1)")
	flag.Parse()
	var ns []int
	for _, s := range strings.Split(*nodes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "scaleout: -nodes %q: want positive integers\n", *nodes)
			os.Exit(2)
		}
		ns = append(ns, n)
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "nodes\tway\tfirst ready (s)\tlast ready (s)\tregistry egress (GB)")
	for _, n := range ns {
		p := params{nodes: n, imageBytes: *imageGB * 1e9, layers: *layers, registryBps: *regGbps * 1e9 / 8,
			nicBps: *nicGbps * 1e9 / 8, unpackBps: *unpackMBps * 1e6, cacheBps: *cacheGbps * 1e9 / 8,
			pieceBytes: 4 << 20, stepSeconds: 0.5, startSeconds: *start, stagger: *stagger}
		for _, way := range []string{"registry", "cache", "p2p-layer", "p2p-piece"} {
			o := simulate(p, way)
			fmt.Fprintf(tw, "%d\t%s\t%.0f\t%.0f\t%.1f\n", n, way, o.firstReady, o.lastReady, o.registryBytes/1e9)
		}
	}
	tw.Flush()
}

package build

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/moby/buildkit/client/llb"
	"github.com/moby/buildkit/solver/pb"
	digest "github.com/opencontainers/go-digest"

	"imagectl/internal/build/layerplan"
	"imagectl/internal/initconfig"
	"imagectl/internal/lock"
)

// graph is a marshalled definition, walked like BuildKit's llbtest.
type graph struct {
	ops   map[digest.Digest]*pb.Op
	order []digest.Digest
	root  digest.Digest
}

func marshal(t *testing.T, l *lock.Lock, opts ...Option) (*llb.Definition, graph) {
	t.Helper()
	def, err := Definition(context.Background(), l, opts...)
	if err != nil {
		t.Fatalf("Definition(%s) error: %v", l.Name, err)
	}
	g := graph{ops: map[digest.Digest]*pb.Op{}}
	for _, dt := range def.Def {
		var op pb.Op
		if err := op.UnmarshalVT(dt); err != nil {
			t.Fatal(err)
		}
		d := digest.FromBytes(dt)
		g.ops[d] = &op
		g.order = append(g.order, d)
	}
	last := g.ops[g.order[len(g.order)-1]]
	if len(last.Inputs) != 1 {
		t.Fatalf("terminal op has %d inputs, want 1", len(last.Inputs))
	}
	g.root = digest.Digest(last.Inputs[0].Digest)
	return def, g
}

func (g graph) sources(prefix string) map[string]*pb.SourceOp {
	out := map[string]*pb.SourceOp{}
	for _, op := range g.ops {
		if s := op.GetSource(); s != nil && strings.HasPrefix(s.Identifier, prefix) {
			out[s.Identifier] = s
		}
	}
	return out
}

func (g graph) execs() []*pb.ExecOp {
	var out []*pb.ExecOp
	for _, d := range g.order {
		if e := g.ops[d].GetExec(); e != nil {
			out = append(out, e)
		}
	}
	return out
}

func TestDefinitionSources(t *testing.T) {
	l := unitLock()
	_, g := marshal(t, l, fakeInit(t))

	imgs := g.sources("docker-image://")
	if len(imgs) != 1 {
		t.Fatalf("image sources = %v, want exactly the base", imgs)
	}
	for id := range imgs {
		if want := "docker-image://" + layerplan.Of(l).Base; id != want {
			t.Errorf("base source = %q, want %q (pinned by manifest digest)", id, want)
		}
	}

	https := g.sources("http")
	if got, want := len(https), len(l.Apt)+len(l.Pip)+1; got != want {
		t.Errorf("%d http sources, want one per deb and wheel and the resolver (%d)", got, want)
	}
	check := func(kind, name, url, sha, filename string) {
		s, ok := https[url]
		if !ok {
			t.Errorf("%s %s: no http source for %s", kind, name, url)
			return
		}
		if got := s.Attrs[pb.AttrHTTPChecksum]; got != "sha256:"+sha {
			t.Errorf("%s %s: checksum attr = %q, want sha256:%s", kind, name, got, sha)
		}
		if got := s.Attrs[pb.AttrHTTPFilename]; got != filename {
			t.Errorf("%s %s: filename attr = %q, want %q", kind, name, got, filename)
		}
	}
	for _, d := range l.Apt {
		check("deb", d.Name, d.URL, d.SHA256, d.Name+"_"+d.Version+"_amd64.deb")
	}
	for _, w := range append(l.Pip, l.Resolver) {
		check("wheel", w.Name, w.URL, w.SHA256, w.Filename)
	}
}

func TestDefinitionInstallsOffline(t *testing.T) {
	l := unitLock()
	_, g := marshal(t, l, fakeInit(t))
	execs := g.execs()
	// system, venv, 3 big wheels, periphery, init, runtime.
	if len(execs) != 8 {
		t.Fatalf("%d exec ops, want 8 (system, venv, 3 big, periphery, init, runtime)", len(execs))
	}
	var pip int
	for _, e := range execs {
		script := strings.Join(e.Meta.Args, " ")
		if e.Network != pb.NetMode_NONE {
			t.Errorf("exec %q: network = %v, want NONE", script, e.Network)
		}
		if !slices.Contains(e.Meta.Env, "SOURCE_DATE_EPOCH=1700000000") {
			t.Errorf("exec %q: env %v lacks SOURCE_DATE_EPOCH", script, e.Meta.Env)
		}
		if !strings.HasSuffix(script, `-exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +`) {
			t.Errorf("exec %q does not clamp the mtimes it wrote", script)
		}
		if strings.Contains(script, " -m venv ") {
			// The venv is made by the lock's interpreter and gets the lock's pip.
			if !strings.Contains(script, "'"+l.Python.Path+"' -m venv --without-pip "+initconfig.VenvPath) ||
				!strings.Contains(script, initconfig.VenvPath+"/bin/python '"+wheelDir+"/"+l.Resolver.Filename+"'/pip install") ||
				strings.Contains(script, "python3 ") {
				t.Errorf("venv exec %q: want %s -m venv and pip run from the locked wheel, no python3 from PATH", script, l.Python.Path)
			}
		} else if strings.Contains(script, " install --no-index --no-deps ") {
			pip++
			if !strings.Contains(script, "--find-links "+wheelDir) {
				t.Errorf("pip exec %q does not install from the fetched wheels", script)
			}
		}
		for _, m := range e.Mounts {
			if (m.Dest == debDir || m.Dest == wheelDir) && !m.Readonly {
				t.Errorf("exec %q: artifacts mounted read-write at %s", script, m.Dest)
			}
		}
	}
	if pip != 4 {
		t.Errorf("%d pip installs, want 4 (3 big + periphery)", pip)
	}
	if !strings.Contains(strings.Join(execs[0].Meta.Args, " "), "apt-get install -y -qq --no-install-recommends "+debDir+"/*.deb") {
		t.Errorf("first exec = %q, want the dpkg install", execs[0].Meta.Args)
	}
}

// chain returns the image's layer ops from the base up: the root op, then
// down each exec's root mount to the base image source.
func (g graph) chain(t *testing.T) []digest.Digest {
	t.Helper()
	var down []digest.Digest
	for d := g.root; ; {
		down = append(down, d)
		op := g.ops[d]
		e := op.GetExec()
		if e == nil {
			break
		}
		var next digest.Digest
		for _, m := range e.Mounts {
			if m.Dest == "/" {
				next = digest.Digest(op.Inputs[m.Input].Digest)
			}
		}
		if next == "" {
			t.Fatalf("exec %q has no root mount", e.Meta.Args)
		}
		d = next
	}
	slices.Reverse(down)
	return down
}

func TestDefinitionLayers(t *testing.T) {
	l := unitLock()
	_, g := marshal(t, l, fakeInit(t))
	chain := g.chain(t)
	// base + system + venv + 3 big + periphery + init + runtime
	if got := len(chain); got != 9 {
		t.Fatalf("the image's root is a chain of %d ops, want 9 (the base and one step per planned layer)", got)
	}
	if s := g.ops[chain[0]].GetSource(); s == nil || s.Identifier != "docker-image://"+layerplan.Of(l).Base {
		t.Errorf("bottom of the chain is %v, want the base image %s", g.ops[chain[0]].Op, layerplan.Of(l).Base)
	}
	for i, d := range chain[1:] {
		if g.ops[d].GetExec() == nil {
			t.Errorf("layer %d is %T, want an install step", i+1, g.ops[d].Op)
		}
	}
	// No diff op anywhere, and merges only for the fetched artifacts,
	// mounted read-only at /mnt: a diff record of BuildKit's is indexed as
	// the layer it reuses but holds only that layer (docs/build.md).
	inChain := map[digest.Digest]bool{}
	for _, d := range chain {
		inChain[d] = true
	}
	for d, op := range g.ops {
		if op.GetDiff() != nil {
			t.Errorf("op %s is a diff", d)
		}
		if op.GetMerge() == nil {
			continue
		}
		if inChain[d] {
			t.Errorf("merge op %s is a layer of the image", d)
		}
		for _, user := range g.ops {
			e := user.GetExec()
			if e == nil {
				continue
			}
			for _, m := range e.Mounts {
				if m.Input >= 0 && int(m.Input) < len(user.Inputs) && digest.Digest(user.Inputs[m.Input].Digest) == d &&
					(m.Dest != debDir || !m.Readonly) {
					t.Errorf("merge op %s is mounted at %s (readonly %v), want only the artifacts read-only at %s", d, m.Dest, m.Readonly, debDir)
				}
			}
		}
	}
}

func TestDefinitionInitLayer(t *testing.T) {
	l := unitLock()
	_, g := marshal(t, l, fakeInit(t))
	files := map[string][]byte{}
	for _, op := range g.ops {
		f := op.GetFile()
		if f == nil {
			continue
		}
		for _, a := range f.Actions {
			if mk := a.GetMkfile(); mk != nil {
				files[mk.Path] = mk.Data
			}
		}
	}
	if got := files["/imagectl-init"]; !bytes.HasPrefix(got, []byte("#!/bin/sh")) {
		t.Errorf("init file = %q, want the --init file", got)
	}
	// The init and the runtime config are the last two steps, each its own
	// layer: the config names the lock, the init's layer does not change
	// with it.
	execs := g.execs()
	initStep := strings.Join(execs[len(execs)-2].Meta.Args, " ")
	runtimeStep := strings.Join(execs[len(execs)-1].Meta.Args, " ")
	if !strings.Contains(initStep, "/imagectl-init "+initconfig.InitPath) || strings.Contains(initStep, initconfig.Path) {
		t.Errorf("init step %q: want it to install %s alone", initStep, initconfig.InitPath)
	}
	if !strings.Contains(runtimeStep, "/runtime.json "+initconfig.Path) || strings.Contains(runtimeStep, initconfig.InitPath) {
		t.Errorf("last step %q: want it to install %s alone", runtimeStep, initconfig.Path)
	}
	var cfg initconfig.Config
	if err := json.Unmarshal(files["/runtime.json"], &cfg); err != nil {
		t.Fatalf("runtime config at %s: %v", initconfig.Path, err)
	}
	if cfg.Image.LockDigest != l.Digest || cfg.Image.Name != "unit" || cfg.Storage.Path != "/storage" {
		t.Errorf("runtime config = %+v, want the lock's runtime with its digest and name", cfg)
	}
}

func TestDefinitionDeterministic(t *testing.T) {
	init := fakeInit(t)
	a, _ := marshal(t, unitLock(), init)
	b, _ := marshal(t, unitLock(), init)
	if len(a.Def) != len(b.Def) {
		t.Fatalf("two marshals: %d vs %d ops", len(a.Def), len(b.Def))
	}
	for i := range a.Def {
		if !bytes.Equal(a.Def[i], b.Def[i]) {
			t.Fatalf("two marshals differ at op %d", i)
		}
	}
}

// TestPeripheryChangeKeepsBigLayers: moving a periphery wheel must leave
// every op of the base, system, venv and big layers untouched (same cache
// keys), and change the periphery layer.
func TestPeripheryChangeKeepsBigLayers(t *testing.T) {
	init := fakeInit(t)
	oldLock := unitLock()
	newLock := unitLock()
	for i, w := range newLock.Pip {
		if w.Name == "demo-util" {
			newLock.Pip[i].Version = "1.2.0"
			newLock.Pip[i].Filename = "demo_util-1.2.0-py3-none-any.whl"
			newLock.Pip[i].URL = "http://whl.example.invalid/demo_util-1.2.0-py3-none-any.whl"
			newLock.Pip[i].SHA256 = sum("util-1.2.0")
		}
	}
	_, og := marshal(t, oldLock, init)
	_, ng := marshal(t, newLock, init)
	oin, nin := og.chain(t), ng.chain(t)
	if len(oin) != len(nin) {
		t.Fatalf("layer count changed: %d -> %d", len(oin), len(nin))
	}
	names := []string{}
	for _, layer := range layerplan.Of(oldLock).Layers {
		names = append(names, layer.Name)
	}
	if len(names) != len(oin) {
		t.Fatalf("%d planned layers, %d layer ops", len(names), len(oin))
	}
	for i, name := range names {
		same := oin[i] == nin[i]
		switch name {
		case "periphery":
			if same {
				t.Errorf("layer %s: digest unchanged after a periphery update", name)
			}
		case "init", "runtime":
			// Steps above the periphery get new cache keys with it (their
			// layer blobs stay: the init's is checked end to end); the
			// runtime config also carries the lock digest, which changes.
		default:
			if !same {
				t.Errorf("layer %s: op digest changed after a periphery-only update", name)
			}
		}
	}
}

func TestDefinitionRejectsBadHash(t *testing.T) {
	l := unitLock()
	l.Pip[0].SHA256 = "not-a-hash"
	_, err := Definition(context.Background(), l, fakeInit(t))
	if err == nil || !strings.Contains(err.Error(), l.Pip[0].Name) {
		t.Fatalf("Definition() with a bad sha256 = %v, want an error naming %s", err, l.Pip[0].Name)
	}
}

func TestDefinitionMissingInit(t *testing.T) {
	_, err := Definition(context.Background(), unitLock(), WithInit("/nonexistent/imagectl-init"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Definition() without an init = %v, want a not-exist error", err)
	}
}

// sha256Digest takes the lock's hex, either case, with or without
// "sha256:", and refuses anything that is not 64 hex digits.
func TestSHA256Digest(t *testing.T) {
	lower := strings.Repeat("ab", 32)
	for _, in := range []string{lower, strings.ToUpper(lower), "sha256:" + lower, "SHA256:" + strings.ToUpper(lower)} {
		if d, err := sha256Digest(in); err != nil || string(d) != "sha256:"+lower {
			t.Errorf("sha256Digest(%q) = %q, %v; want sha256:%s", in, d, err, lower)
		}
	}
	for _, in := range []string{"", "sha256:", lower[:62], lower + "ab", strings.Repeat("g", 64), "sha512:" + lower} {
		if d, err := sha256Digest(in); err == nil {
			t.Errorf("sha256Digest(%q) = %q, want an error", in, d)
		}
	}
}

// An eStargz build of a lock whose SOURCE_DATE_EPOCH is 0 stamps its files
// one second later: eStargz's TOC leaves a zero time out and
// stargz-snapshotter then serves the file as of year 1 (fileEpoch). Other
// compressions keep the lock's 0, and a non-zero epoch is kept by all.
func TestFileEpochEstargz(t *testing.T) {
	for _, tc := range []struct {
		compression string
		epoch       int64
		want        string
	}{
		{"estargz", 0, "1"},
		{"gzip", 0, "0"},
		{"", 0, "0"},
		{"estargz", 1700000000, "1700000000"},
	} {
		l := unitLock()
		l.SourceDateEpoch = tc.epoch
		_, g := marshal(t, l, fakeInit(t), WithCompression(tc.compression))
		for _, e := range g.execs() {
			if !slices.Contains(e.Meta.Env, "SOURCE_DATE_EPOCH="+tc.want) {
				t.Errorf("%q, lock epoch %d: exec env %v, want SOURCE_DATE_EPOCH=%s", tc.compression, tc.epoch, e.Meta.Env, tc.want)
			}
		}
		o, err := makeOptions(WithCompression(tc.compression))
		if err != nil {
			t.Fatal(err)
		}
		sopt, _, err := solveOpt(l, o)
		if err != nil {
			t.Fatal(err)
		}
		if got := sopt.Exports[0].Attrs["source-date-epoch"]; got != tc.want {
			t.Errorf("%q, lock epoch %d: exporter source-date-epoch %q, want %s", tc.compression, tc.epoch, got, tc.want)
		}
		if got := sopt.FrontendAttrs["build-arg:SOURCE_DATE_EPOCH"]; got != tc.want {
			t.Errorf("%q, lock epoch %d: build-arg SOURCE_DATE_EPOCH %q, want %s", tc.compression, tc.epoch, got, tc.want)
		}
	}
}

// Command gputool holds the GPU machine run's helpers (hack/gpu/e2e.sh)
// that are no part of imagectl itself:
//
//	gputool base --root / --push REF [--add SRC=DST]... [--deb PKG]... [--drop-deb PKG]...
//	    pack the machine's own root (usr, etc, var and the merged-/usr links;
//	    no /usr/local, /opt, docs, caches or logs) as a one-layer zstd image
//	    and push it: the test fixture base with the machine's Python 3.12;
//	    --deb packs an installed deb's files also where they are under a
//	    left-out folder (the CUDA debs in /usr/local), --drop-deb leaves a
//	    deb's files and its dpkg paragraph out: nvidia/cuda's base and
//	    runtime flavours made of the machine's CUDA debs
//	gputool drift LOCK OUTDIR
//	    write LOCK's variants whose NCCL, cuDNN, torch or driver floor
//	    differ (digests recomputed, compile cache check off): verification
//	    must fail naming both versions
//	gputool pull --address SOCK --namespace NS REF
//	    pull and unpack REF into containerd, print the seconds (JSON)
//	gputool diff OLD NEW
//	    bytes of NEW's layers that OLD lacks, against NEW's size (JSON)
//	gputool record FILE IMAGE REPO SOURCE TAG MONTH LOCK_DIGEST MOVING
//	    record a release in a release file (releasefile.Record)
//	gputool mklock [flags]
//	    lock the environment it runs in (mklock.go)
//	gputool registry --addr 127.0.0.1:5000 --dir DIR
//	    serve a registry on loopback (registry.go)
package main

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/remotes/docker"
	"github.com/containerd/containerd/v2/core/remotes/docker/config"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/klauspost/compress/zstd"

	"imagectl/hack/internal/rootfs"
	"imagectl/internal/dpkg"
	"imagectl/internal/lock"
	"imagectl/internal/releasefile"
)

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "gputool:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return errors.New("usage: gputool base|drift|pull|diff|record|mklock|registry [ARGS]")
	}
	switch args[0] {
	case "base":
		fl := flag.NewFlagSet("base", flag.ContinueOnError)
		root := fl.String("root", "/", "root to pack")
		push := fl.String("push", "", "reference to push")
		var adds, envs multi
		fl.Var(&adds, "add", "SRC=DST: also pack host folder SRC at DST")
		fl.Var(&envs, "env", "K=V: also set K in the image config's Env (nvidia/cuda's CUDA_VERSION)")
		var debs, drops multi
		fl.Var(&debs, "deb", "PKG: also pack the files of installed deb PKG under left-out folders")
		fl.Var(&drops, "drop-deb", "PKG: leave out the files of installed deb PKG and its dpkg paragraph")
		if err := fl.Parse(args[1:]); err != nil {
			return err
		}
		return base(*root, *push, adds, envs, debs, drops)
	case "drift":
		if len(args) != 3 {
			return errors.New("usage: gputool drift LOCK OUTDIR")
		}
		return drift(args[1], args[2])
	case "pull":
		fl := flag.NewFlagSet("pull", flag.ContinueOnError)
		addr := fl.String("address", "", "containerd socket")
		ns := fl.String("namespace", "bench", "containerd namespace")
		if err := fl.Parse(args[1:]); err != nil || fl.NArg() != 1 {
			return errors.New("usage: gputool pull --address SOCK --namespace NS REF")
		}
		return pull(ctx, *addr, *ns, fl.Arg(0))
	case "diff":
		if len(args) != 3 {
			return errors.New("usage: gputool diff OLD NEW")
		}
		return diff(args[1], args[2])
	case "mklock":
		return mklockMain(args[1:])
	case "registry":
		return registryMain(args[1:])
	case "record":
		if len(args) != 9 {
			return errors.New("usage: gputool record FILE IMAGE REPO SOURCE TAG MONTH LOCK_DIGEST MOVING")
		}
		return releasefile.Record(args[1], args[2], args[3],
			releasefile.Release{Source: args[4], Tags: []string{args[5]}, Month: args[6], LockDigest: args[7]}, args[8])
	}
	return fmt.Errorf("unknown command %q", args[0])
}

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

// kept are the root's top-level entries packed; skipped are subtrees left
// out (the driver under /usr/local comes in by CDI; docs, caches, logs and
// machine state are not a base's).
var (
	kept    = []string{"usr", "etc", "var", "bin", "sbin", "lib", "lib64"}
	empties = map[string]int64{"dev": 0o755, "proc": 0o555, "sys": 0o555, "tmp": 0o1777, "run": 0o755,
		"root": 0o700, "home": 0o755, "opt": 0o755, "mnt": 0o755, "srv": 0o755, "media": 0o755}
	skipped = []string{"usr/local", "usr/share/doc", "usr/share/man", "usr/share/info", "var/cache", "var/log",
		"var/tmp", "var/lib/apt/lists", "var/lib/containerd", "var/lib/buildkit", "etc/cdi", "var/run", "var/lock"}
)

func isSkipped(rel string) bool {
	for _, s := range skipped {
		if rel == s || strings.HasPrefix(rel, s+"/") {
			return true
		}
	}
	return false
}

func base(root, push string, adds, envs, debs, drops []string) error {
	if push == "" {
		return errors.New("base: --push is required")
	}
	dropped := map[string]bool{}
	for _, p := range drops {
		files, err := debFiles(root, p)
		if err != nil {
			return err
		}
		for _, f := range files {
			dropped[f] = true
		}
	}
	ref, err := name.ParseReference(push, name.Insecure)
	if err != nil {
		return err
	}
	start := time.Now()
	f, err := os.CreateTemp("", "gpu-base-*.tar.zst")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	zw, err := zstd.NewWriter(f)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(zw)
	rw := rootfs.NewWriter(tw)
	add := rw.Add
	walk := func(dir, prefix string, skip bool) error {
		return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(dir, path)
			if err != nil {
				return err
			}
			rel = filepath.ToSlash(filepath.Join(prefix, rel))
			if skip && isSkipped(rel) {
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			fi, err := os.Lstat(path)
			if err != nil {
				return err
			}
			if !fi.IsDir() && dropped[rel] {
				return nil
			}
			if rel == "var/lib/dpkg/status" && len(drops) > 0 {
				return addStatusWithout(add, path, rel, drops)
			}
			return add(path, rel, fi)
		})
	}
	for _, top := range kept {
		p := filepath.Join(root, top)
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if err := add(p, top, fi); err != nil {
				return err
			}
			continue
		}
		if err := walk(p, top, true); err != nil {
			return err
		}
	}
	// --deb: the deb's listed entries the walk left out, parents first (a
	// list names each folder before what it holds).
	seen := map[string]bool{}
	for _, p := range debs {
		files, err := debFiles(root, p)
		if err != nil {
			return err
		}
		for _, rel := range files {
			if !isSkipped(rel) || seen[rel] {
				continue
			}
			seen[rel] = true
			path := filepath.Join(root, rel)
			fi, err := os.Lstat(path)
			if errors.Is(err, fs.ErrNotExist) {
				continue // listed, since removed (dpkg --path-exclude)
			} else if err != nil {
				return err
			}
			if err := add(path, rel, fi); err != nil {
				return err
			}
		}
	}
	for dir, mode := range empties {
		if err := tw.WriteHeader(&tar.Header{Name: dir + "/", Typeflag: tar.TypeDir, Mode: mode, ModTime: start}); err != nil {
			return err
		}
	}
	for _, a := range adds {
		src, dst, ok := strings.Cut(a, "=")
		if !ok {
			return fmt.Errorf("--add %q: want SRC=DST", a)
		}
		if err := walk(src, strings.TrimPrefix(dst, "/"), false); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	packed := time.Since(start)
	layer, err := tarball.LayerFromFile(f.Name(), tarball.WithMediaType(types.OCILayerZStd))
	if err != nil {
		return err
	}
	img, err := mutate.Append(mutate.MediaType(empty.Image, types.OCIManifestSchema1), mutate.Addendum{Layer: layer,
		History: v1.History{CreatedBy: "gputool base: the GPU machine's own Ubuntu root (a test fixture)", Created: v1.Time{Time: start}}})
	if err != nil {
		return err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	cf.Config.Env = append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8"}, envs...)
	cf.Config.Labels = map[string]string{"org.opencontainers.image.description": "test fixture: the GPU machine's own Ubuntu 24.04 root (hack/gpu/gputool base)"}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return err
	}
	if err := remote.Write(ref, img); err != nil {
		return fmt.Errorf("pushing %s: %w", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		return err
	}
	st, _ := os.Stat(f.Name())
	fmt.Fprintf(os.Stderr, "gputool base: %d entries, %d bytes of files, %d bytes zstd, packed in %s, pushed in %s\n",
		rw.Entries, rw.Bytes, st.Size(), packed.Round(time.Millisecond), (time.Since(start) - packed).Round(time.Millisecond))
	fmt.Println(ref.Context().Digest(d.String()).String())
	return nil
}

// debFiles returns the entries (relative to the root) that the file list
// of installed deb pkg names (dpkg.ListPaths: PKG:amd64.list for a
// Multi-Arch: same package, else PKG.list).
func debFiles(root, pkg string) ([]string, error) {
	var b []byte
	var err error
	for _, p := range dpkg.ListPaths(pkg, "amd64") { // the GPU machine's
		if b, err = os.ReadFile(filepath.Join(root, p)); err == nil {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("deb %s: no file list in %s (is it installed?): %w", pkg, filepath.Join(root, dpkg.InfoDir), err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if rel := strings.TrimPrefix(l, "/"); rel != "" && rel != "." {
			out = append(out, rel)
		}
	}
	return out, nil
}

// addStatusWithout packs dpkg's status file at rel without the paragraphs
// of the packages in drops, so that the base's database matches its files.
func addStatusWithout(add func(string, string, fs.FileInfo) error, path, rel string, drops []string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var keep []string
	for _, para := range strings.Split(strings.TrimRight(string(b), "\n"), "\n\n") {
		name, _, _ := strings.Cut(strings.TrimPrefix(para, "Package: "), "\n")
		if !strings.HasPrefix(para, "Package: ") || !slices.Contains(drops, name) {
			keep = append(keep, para)
		}
	}
	tmp, err := os.CreateTemp("", "gpu-base-status-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(strings.Join(keep, "\n\n") + "\n"); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	fi, err := os.Lstat(tmp.Name())
	if err != nil {
		return err
	}
	return add(tmp.Name(), rel, fi)
}

// drift writes the variants of a lock that verification must refuse.
func drift(path, out string) error {
	variants := map[string]func(*lock.Lock){
		"nccl":         func(l *lock.Lock) { l.Core.NCCL = "2.27.3" },
		"cudnn":        func(l *lock.Lock) { l.Core.CUDNN = "9.10.2.21" },
		"torch":        func(l *lock.Lock) { l.Core.Torch = "2.10.0" },
		"driver-floor": func(l *lock.Lock) { l.Core.DriverFloor = "590.44.01" },
		// Another base toolkit than the image's (issue 25): cuda.toolkit
		// must fail naming both, the torch-side checks still pass.
		"cuda-toolkit": func(l *lock.Lock) { l.Core.CUDA = "12.8" },
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for n, f := range variants {
		l, err := lock.Read(path)
		if err != nil {
			return err
		}
		f(l)
		// The drifted core fails the torch probe's checks; the compile
		// cache check would only add half a minute.
		l.Verify.CompileCache = false
		if err := lock.Write(filepath.Join(out, n+".lock.json"), l); err != nil {
			return err
		}
	}
	return nil
}

func pull(ctx context.Context, addr, ns, ref string) error {
	c, err := containerd.New(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx = namespaces.WithNamespace(ctx, ns)
	res := docker.NewResolver(docker.ResolverOptions{Hosts: config.ConfigureHosts(ctx, config.HostOptions{})})
	t := time.Now()
	img, err := c.Pull(ctx, ref, containerd.WithPullUnpack, containerd.WithPullSnapshotter("overlayfs"), containerd.WithResolver(res))
	if err != nil {
		return err
	}
	secs := time.Since(t).Seconds()
	size, err := img.Size(ctx)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]any{"ref": ref, "namespace": ns, "seconds": secs, "compressed_bytes": size})
}

func layers(ref string) (map[string]int64, int64, error) {
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return nil, 0, err
	}
	img, err := remote.Image(r)
	if err != nil {
		return nil, 0, err
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, 0, err
	}
	out := map[string]int64{}
	var total int64
	for _, l := range m.Layers {
		out[l.Digest.String()] = l.Size
		total += l.Size
	}
	return out, total, nil
}

func diff(oldRef, newRef string) error {
	old, _, err := layers(oldRef)
	if err != nil {
		return err
	}
	cur, total, err := layers(newRef)
	if err != nil {
		return err
	}
	var changed int64
	var n int
	for d, s := range cur {
		if _, ok := old[d]; !ok {
			changed += s
			n++
		}
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]any{"old": oldRef, "new": newRef, "layers": len(cur), "changed_layers": n,
		"changed_bytes": changed, "image_layer_bytes": total, "ratio": float64(changed) / float64(total)})
}

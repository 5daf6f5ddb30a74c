package resolve

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/moby/buildkit/client"
	"github.com/moby/buildkit/client/llb"
	"github.com/moby/buildkit/identity"
	digest "github.com/opencontainers/go-digest"
	ocispecs "github.com/opencontainers/image-spec/specs-go/v1"

	"imagectl/internal/auth"
	"imagectl/internal/auth/bkauth"
	"imagectl/internal/exitcode"
	"imagectl/internal/lock"
	"imagectl/internal/logs"
)

// Job is one resolution step: a shell script run inside the base image.
// It reads its inputs under /in and writes its results under /out.
type Job struct {
	// Name labels the step in progress output ("apt resolve").
	Name string
	// Image is the base by digest, "repo@sha256:...".
	Image string
	// Platform is the OCI platform the step runs as ("linux/arm64"; a
	// platform other than the daemon's runs under emulation). The default
	// is linux/amd64.
	Platform string
	// Debs are fetched by URL, checked by sha256 and installed with dpkg
	// before Script runs.
	Debs []lock.Deb
	// Files are mounted read-only under /in, by name.
	Files map[string][]byte
	// Script runs with /bin/sh -c. It must exit 0 and report failures of
	// the tools it drives through files under /out.
	Script string
	// Netrc mounts the index credentials (a secret) at /root/.netrc.
	Netrc bool
	// Resolver, when set, is fetched by URL, checked by sha256 and mounted
	// read-only at /pip/FILENAME: the pip wheel the script runs.
	Resolver *lock.Wheel
	// Access gives the step its credentials: the base's registry
	// credentials (the session's auth provider), the netrc and the HTTP
	// auth headers of the fetches (secrets). nil is auth.Default().
	Access *auth.Access
}

func (j Job) access() *auth.Access {
	if j.Access == nil {
		return auth.Default()
	}
	return j.Access
}

// accessRunner gives every job without its own Access this one.
type accessRunner struct {
	inner  Runner
	access *auth.Access
}

func (r accessRunner) Run(ctx context.Context, j Job) (map[string][]byte, error) {
	if j.Access == nil {
		j.Access = r.access
	}
	return r.inner.Run(ctx, j)
}

// Runner runs a Job and returns the files it wrote under /out, by path
// relative to /out. The BuildKit runner is the real one; tests use fakes.
type Runner interface {
	Run(ctx context.Context, j Job) (map[string][]byte, error)
}

// netrcSecret is the BuildKit secret ID of the index credentials.
const netrcSecret = "imagectl-netrc"

type buildkitRunner struct {
	addr       string
	clientOpts []client.ClientOpt
}

// UnavailableError reports a buildkitd that cannot be reached.
type UnavailableError struct {
	Addr string
	Err  error
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("buildkitd at %s is not reachable: %v", e.Addr, e.Err)
}
func (e *UnavailableError) Unwrap() error { return e.Err }

// ExitCode implements exitcode.Coder.
func (e *UnavailableError) ExitCode() int { return exitcode.Unavailable }

// Definition returns the LLB of j: the state whose /out is exported. It
// needs no daemon, so tests can inspect it.
func (j Job) Definition(ctx context.Context) (*llb.Definition, error) {
	a := j.access()
	plat := ocispecs.Platform{OS: "linux", Architecture: "amd64"}
	if j.Platform != "" {
		p, err := v1.ParsePlatform(j.Platform)
		if err != nil {
			return nil, fmt.Errorf("%s: platform %q: %w", j.Name, j.Platform, err)
		}
		plat = ocispecs.Platform{OS: p.OS, Architecture: p.Architecture, Variant: p.Variant}
	}
	st := llb.Image(j.Image, llb.Platform(plat), llb.WithCustomNamef("%s: base", j.Name))
	env := []llb.RunOption{
		llb.AddEnv("DEBIAN_FRONTEND", "noninteractive"),
		llb.AddEnv("PIP_DISABLE_PIP_VERSION_CHECK", "1"),
		llb.AddEnv("PIP_NO_INPUT", "1"),
		llb.AddEnv("HOME", "/root"),
		llb.AddEnv("LC_ALL", "C.UTF-8"),
	}
	if len(j.Debs) > 0 {
		debs := llb.Scratch()
		for _, d := range j.Debs {
			f := debFileName(d)
			hopts := []llb.HTTPOption{llb.Checksum(digest.Digest("sha256:" + d.SHA256)), llb.Filename(f),
				llb.WithCustomNamef("%s: fetch %s %s", j.Name, d.Name, d.Version)}
			if id, _, ok := a.HTTPAuthSecret(d.URL); ok {
				hopts = append(hopts, llb.AuthHeaderSecret(id))
			}
			src := llb.HTTP(d.URL, hopts...)
			debs = debs.File(llb.Copy(src, "/"+f, "/"+f))
		}
		opts := append([]llb.RunOption{
			// apt-get orders the unpacking by Pre-Depends; dpkg -i of a set does not.
			llb.Args([]string{"/bin/sh", "-c", "apt-get install -y -qq --no-install-recommends /debs/*.deb >/tmp/imagectl-apt.log 2>&1 || { cat /tmp/imagectl-apt.log >&2; exit 1; }"}),
			llb.AddMount("/debs", debs, llb.Readonly),
			llb.WithCustomNamef("%s: install %d locked debs", j.Name, len(j.Debs)),
		}, env...)
		st = st.Run(opts...).Root()
	}
	in := llb.Scratch()
	names := make([]string, 0, len(j.Files))
	for n := range j.Files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		in = in.File(llb.Mkfile("/"+n, 0o644, j.Files[n]))
	}
	opts := append([]llb.RunOption{
		llb.Args([]string{"/bin/sh", "-c", j.Script}),
		llb.AddMount("/in", in, llb.Readonly),
		llb.IgnoreCache,
		llb.WithCustomName(j.Name),
	}, env...)
	if w := j.Resolver; w != nil {
		src := llb.HTTP(w.URL, llb.Checksum(digest.Digest("sha256:"+w.SHA256)), llb.Filename(w.Filename),
			llb.WithCustomNamef("%s: fetch %s %s", j.Name, w.Name, w.Version))
		opts = append(opts, llb.AddMount("/pip", src, llb.Readonly))
	}
	if j.Netrc {
		opts = append(opts, llb.AddSecret("/root/.netrc", llb.SecretID(netrcSecret), llb.SecretOptional))
	}
	run := st.Run(opts...)
	out := run.AddMount("/out", llb.Scratch())
	return out.Marshal(ctx, llb.Platform(plat))
}

func (r *buildkitRunner) Run(ctx context.Context, j Job) (map[string][]byte, error) {
	log := logs.From(ctx)
	c, err := client.New(ctx, r.addr, r.clientOpts...)
	if err != nil {
		return nil, &UnavailableError{Addr: r.addr, Err: err}
	}
	defer c.Close()
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	_, err = c.ListWorkers(pctx)
	cancel()
	if err != nil {
		return nil, &UnavailableError{Addr: r.addr, Err: err}
	}
	def, err := j.Definition(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: building LLB: %w", j.Name, err)
	}
	dir, err := os.MkdirTemp("", "imagectl-lock-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	opt := client.SolveOpt{
		Exports: []client.ExportEntry{{Type: client.ExporterLocal, OutputDir: dir}},
	}
	a := j.access()
	secrets := map[string][]byte{}
	if j.Netrc {
		secrets[netrcSecret] = a.Netrc()
	}
	var urls []string
	for _, d := range j.Debs {
		urls = append(urls, d.URL)
	}
	maps.Copy(secrets, a.HTTPAuthSecrets(urls))
	var regs []string
	if ref, err := name.ParseReference(j.Image); err == nil {
		regs = append(regs, ref.Context().RegistryStr())
	}
	opt.Session = bkauth.Session(a, regs, secrets)
	ch := make(chan *client.SolveStatus)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for s := range ch {
			for _, v := range s.Vertexes {
				if v.Completed != nil {
					log.Debug("lock step", "step", v.Name, "cached", v.Cached, "error", v.Error)
				}
			}
		}
	}()
	opt.Ref = identity.NewID() // logged: names the solve in buildkitd's history
	log.Debug("lock step solving", "step", j.Name, "ref", opt.Ref)
	start := time.Now()
	// Cancelled, BuildKit's client waits up to 5 s for buildkitd to end
	// the solve's status stream: after a second, closing the connection
	// ends it (buildkitd cancels the job of a closed session either way).
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(time.Second, func() { c.Close() }) })
	_, err = c.Solve(ctx, def, opt, ch)
	stop()
	<-done
	if err != nil {
		return nil, fmt.Errorf("%s: solving on %s: %w", j.Name, r.addr, err)
	}
	log.Info("lock step done", "step", j.Name, "platform", j.Platform, "buildkitd", r.addr, "seconds", time.Since(start).Seconds())
	files := map[string][]byte{}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = b
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: reading its output: %w", j.Name, err)
	}
	return files, nil
}

// debFileName is d's name in the install step: name_version_arch.deb
// with the characters apt quotes in its archive names escaped.
func debFileName(d lock.Deb) string {
	q := strings.NewReplacer("%", "%25", ":", "%3a", "_", "%5f", "/", "%2f")
	return q.Replace(d.Name) + "_" + q.Replace(d.Version) + "_" + q.Replace(d.Arch) + ".deb"
}

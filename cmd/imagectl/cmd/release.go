package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/moby/buildkit/client"
	"github.com/moby/buildkit/util/progress/progressui"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/spf13/cobra"

	"imagectl/internal/build"
	"imagectl/internal/exitcode"
	"imagectl/internal/release"
	"imagectl/internal/scan"
	"imagectl/internal/sign"
	"imagectl/internal/spec"
	"imagectl/internal/verify"
	"imagectl/internal/verify/containerd"
	"imagectl/internal/verify/runtimes"
)

type releaseFlags struct {
	spec                     specFlags
	out                      outputFlag
	images                   []string
	imagesDir                string
	jobs                     int
	addr, progress, initPath string
	cacheFrom, cacheTo       []string
	key, pub                 string
	verifierKey, verifierPub string
	runtime, containerd      string
	kube                     kubeFlags
	requireContainer         bool
	storage                  string
	lockMissing, noPromote   bool
	month                    string
	metricsFile, pushgateway string
	builderID                string
	skipPlatforms            []string
	builders                 builderFlags
	scan                     scanFlags
}

func newReleaseCmd() *cobra.Command {
	var f releaseFlags
	cmd := &cobra.Command{
		Use:   "release [specs...] [--image NAME]",
		Short: "Run the whole pipeline per image: lock check, build, sign, verify, scan (--db), promote",
		Long: `Release runs, for each concrete image of the specs: the lock check (the lock in
--images must match the spec; --lock-missing resolves one that does not exist),
the build (pushed by digest to the staging repository), signing with the lock,
SBOM and provenance attestations, verification (the result signed with the
verifier key) and promotion (the digest recorded in images/NAME/releases.json
with the tags NAME-YYYY.MM and NAME, the release repository reconciled, and the
month's changelog written beside it).

An image with several platforms (spec platforms) is built into an OCI image
index. Its verify stage runs the image of this host's platform and reports the
others as not verified; promotion then needs each other platform verified (on a
GPU host of that platform, imagectl verify --sign) or named with --skip-platform.

An image stops at its first failing stage, named in the table; the others go on.
A re-run skips what is done: BuildKit's cache makes the build a no-op, and a
digest already signed or verified is not signed or verified again.

With --db, a scan stage runs between verify and promote: each image (of an
image index, each platform image) is scanned (its signed SBOM against the
vulnerability database, images/NAME/vex.json applied) and the result is signed
as its vuln attestation; promotion then gates on the spec's
policy { vulnerabilities { ... } } (docs/security.md). The scan stage is never
resumed: a rerun scans again with the database it is given.

Both keys are opened, and checked against their public halves (--pub,
--verifier-pub), before the first build. The signing key's password comes from
$IMAGECTL_SIGNING_PASSWORD (or $COSIGN_PASSWORD); the verifier key's from
$IMAGECTL_VERIFIER_PASSWORD, and without it from the signing key's variables
(one password for both keys).
Every stage logs in to the registries with the Docker config and to the wheel
indexes with --netrc, trusting the system store plus --ca-file; a refused login
stops the image with exit 77, naming the host and the credential source.`,
		Example: `  # the monthly release of every image in specs/pytorch.hcl, two at a time
  imagectl release specs/pytorch.hcl --jobs 2 --key signing.key --verifier-key verifier.key \
    --verify-runtime in-place --metrics-file /var/lib/node_exporter/imagectl.prom

  # a linux/amd64 + linux/arm64 image from an amd64 GPU host: verify runs the
  # amd64 image, and the arm64 one is promoted without a verification of its own
  imagectl release specs/pytorch.hcl --image pytorch-cu126-py3.11 --key signing.key \
    --verifier-key verifier.key --skip-platform linux/arm64

  # one image of the demo, locking it first, verifying with containerd
  imagectl release specs/demo.hcl --image demo --lock-missing --key k/cosign.key \
    --verifier-key v/cosign.key --verify-runtime containerd

  # from a CI runner without a GPU: each image verified as a Job on the fleet, four at once
  imagectl release specs/pytorch.hcl --jobs 4 --key signing.key --verifier-key verifier.key \
    --verify-runtime kubernetes --kubeconfig ~/.kube/gpu-fleet --namespace imagectl-verify --require-container-runtime`,
		RunE: func(cmd *cobra.Command, args []string) error { return runRelease(cmd, args, &f) },
	}
	fl := cmd.Flags()
	f.spec.add(cmd)
	addOutputFlag(cmd, &f.out)
	fl.StringArrayVar(&f.images, "image", nil, "release only this image (repeatable)")
	fl.StringVar(&f.imagesDir, "images", "images", "directory holding images/<name>/ (locks and release files)")
	flagAliases(cmd, map[string]string{"images-dir": "images"})
	fl.IntVar(&f.jobs, "jobs", 1, "images run at once")
	fl.StringVar(&f.addr, "addr", "", "buildkitd address (default $BUILDKIT_HOST)")
	fl.StringVar(&f.progress, "progress", "auto", "build progress on stderr: auto, tty, plain, rawjson or quiet (plain when --jobs > 1)")
	fl.StringVar(&f.initPath, "init", "", "the init binary to bake in (default: imagectl-init beside imagectl)")
	fl.StringArrayVar(&f.cacheFrom, "cache-from", nil, "import build cache, e.g. type=registry,ref=REPO:TAG")
	fl.StringArrayVar(&f.cacheTo, "cache-to", nil, "export build cache, e.g. type=registry,ref=REPO:TAG,mode=max")
	fl.StringVar(&f.key, "key", "", "signing key (cosign.key)")
	fl.StringVar(&f.pub, "pub", "", "signing public key (default: --key with .pub)")
	fl.StringVar(&f.verifierKey, "verifier-key", "", "verifier key that signs the verification result")
	fl.StringVar(&f.verifierPub, "verifier-pub", "", "verifier public key (default: --verifier-key with .pub)")
	fl.StringVar(&f.runtime, "verify-runtime", "auto", "containerd, podman, docker, in-place, kubernetes (a Job per image on a GPU cluster, --jobs at once), or auto (containerd when its socket answers, else podman, else docker; never in-place or kubernetes)")
	f.kube.add(cmd) // --kubeconfig, --context, --namespace, --storage-claim
	fl.StringVar(&f.containerd, "containerd-address", "", "containerd socket (default $CONTAINERD_ADDRESS, else "+containerd.DefaultAddress+")")
	fl.BoolVar(&f.requireContainer, "require-container-runtime", false, "promote only digests verified in a container started from the digest")
	fl.StringVar(&f.scan.db, "db", "", "vulnerability database (a grype v6 directory or archive, or an OCI artifact REF): scan each image before promotion, attest the result, and gate promotion on the spec's policy { vulnerabilities { ... } }")
	fl.DurationVar(&f.scan.maxDBAge, "max-db-age", scan.DefaultMaxDBAge, "refuse a vulnerability database built longer ago than this")
	fl.StringSliceVar(&f.skipPlatforms, "skip-platform", nil, "multi-platform images: a platform (linux/arm64) whose image may be promoted unverified; verify runs this host's platform, every other platform must be verified or named here (repeatable)")
	fl.StringVar(&f.storage, "storage", "", "container runtimes: host folder mounted as the image's storage (default: a throwaway ready folder per image)")
	fl.BoolVar(&f.lockMissing, "lock-missing", false, "resolve and write a lock that does not exist yet")
	fl.BoolVar(&f.noPromote, "no-promote", false, "stop after verification")
	fl.StringVar(&f.month, "month", "", "release month YYYY-MM (default: this month, UTC)")
	fl.StringVar(&f.metricsFile, "metrics-file", "", "write Prometheus metrics here (textfile collector format)")
	fl.StringVar(&f.pushgateway, "pushgateway", "", "push Prometheus metrics to this Pushgateway URL")
	fl.StringVar(&f.builderID, "builder-id", sign.DefaultBuilderID, "builder URI recorded in the provenance")
	f.builders.add(cmd) // --builder PLATFORM=ADDRESS, --tlscacert/--tlscert/--tlskey
	return cmd
}

func runRelease(cmd *cobra.Command, args []string, f *releaseFlags) error {
	asJSON, err := f.out.json()
	if err != nil {
		return err
	}
	imgs, err := loadImages(cmd, f.spec, args, f.images)
	if err != nil {
		return err
	}
	cfg, closeAll, err := f.config(cmd, imgs)
	if err != nil {
		return err
	}
	defer closeAll()
	stages, err := release.NewReal(cfg)
	if err != nil {
		return exitcode.Wrap(exitcode.Usage, err)
	}
	outcomes, runErr := release.Run(cmd.Context(), imgs, stages, release.WithJobs(f.jobs),
		release.WithPromote(!f.noPromote), release.WithProgress(releaseProgress(cmd.ErrOrStderr())))
	// The results first: a metrics failure must not hide them. The
	// release's own failure decides the exit code; then the output's, then
	// the metrics'.
	outErr := writeReleaseOutcomes(cmd.OutOrStdout(), outcomes, asJSON)
	metricsErr := release.WriteMetrics(cmd.Context(), f.metricsFile, f.pushgateway, outcomes, time.Now())
	return errors.Join(runErr, outErr, metricsErr)
}

// config opens both keys (checked against their public halves before the
// first build: a wrong password or key fails now, not after it), dials the
// builders and selects the verify runtime. closeAll closes the builders.
func (f *releaseFlags) config(cmd *cobra.Command, imgs []spec.Image) (_ release.Config, closeAll func(), err error) {
	if f.key == "" || f.verifierKey == "" {
		return release.Config{}, nil, exitcode.Wrap(exitcode.Usage, fmt.Errorf("release signs and verifies: --key and --verifier-key are required"))
	}
	ctx := cmd.Context()
	signer, err := openKey(ctx, "--key", f.key, pubFor(f.pub, f.key), sign.PasswordFromEnv, sign.PasswordEnv+" or $"+sign.CosignPasswordEnv)
	if err != nil {
		return release.Config{}, nil, err
	}
	verifier, err := openKey(ctx, "--verifier-key", f.verifierKey, pubFor(f.verifierPub, f.verifierKey), sign.VerifierPasswordFromEnv,
		sign.VerifierPasswordEnv+" (or the signing key's $"+sign.PasswordEnv+", $"+sign.CosignPasswordEnv+")")
	if err != nil {
		return release.Config{}, nil, err
	}
	rt, err := f.verifyRuntimeOf(cmd, imgs)
	if err != nil {
		return release.Config{}, nil, err
	}
	c, err := f.builders.dial(ctx, build.Addr(f.addr), 10*time.Second)
	if err != nil {
		return release.Config{}, nil, err
	}
	blopts, bbopts, closeBuilders, err := f.builders.releaseOptions(ctx, imgs, build.Addr(f.addr), 10*time.Second)
	if err != nil {
		c.Close()
		return release.Config{}, nil, err
	}
	access := accessOf(cmd)
	bopts := append([]build.Option{build.WithCacheFrom(f.cacheFrom...), build.WithCacheTo(f.cacheTo...), build.WithAccess(access)}, bbopts...)
	if f.initPath != "" {
		bopts = append(bopts, build.WithInit(f.initPath))
	}
	return release.Config{
		ImagesDir:               f.imagesDir,
		LockMissing:             f.lockMissing,
		LockOptions:             append(lockOptions(cmd, build.Addr(f.addr), nil), blopts...),
		Buildkit:                c,
		BuildOptions:            bopts,
		BuildStatus:             buildStatus(cmd.ErrOrStderr(), f),
		Builder:                 sign.Builder{ID: f.builderID, BuildKitVersion: buildkitVersion(cmd, c)},
		SignOptions:             []sign.Option{sign.WithSigner(signer)},
		PublicKey:               pubFor(f.pub, f.key),
		VerifierSignOptions:     []sign.Option{sign.WithSigner(verifier)},
		VerifierPublicKey:       pubFor(f.verifierPub, f.verifierKey),
		VerifyRuntime:           rt,
		RequireContainerRuntime: f.requireContainer,
		SkipPlatforms:           f.skipPlatforms,
		Month:                   f.month,
		Access:                  access,
		VulnDB:                  f.scan.db,
		ScanOptions:             []scan.Option{scan.WithMaxDBAge(f.scan.maxDBAge)},
		VulnPolicies:            imgs,
		SupportMonths:           supportMonths(imgs),
	}, func() { closeBuilders(); c.Close() }, nil
}

// verifyRuntimeOf selects the verify runtime the flags name and prints
// which one and why on stderr.
func (f *releaseFlags) verifyRuntimeOf(cmd *cobra.Command, imgs []spec.Image) (release.VerifyRuntime, error) {
	sel, err := release.SelectVerifyRuntime(cmd.Context(), f.runtime, runtimes.WithStorage(f.storage), runtimes.WithContainerdAddress(f.containerd),
		runtimes.WithContainerd(containerd.WithTLS(accessOf(cmd).TLSConfig())), runtimes.WithKubernetes(f.kube.options()...))
	if err != nil {
		return nil, err
	}
	printRuntime(cmd.ErrOrStderr(), "release: verify", sel.Kind, sel.Reason)
	if sel.Kind == verify.RuntimeKubernetes && f.kube.claim != "" {
		if err := release.CheckSharedFingerprints(imgs, f.jobs); err != nil {
			return nil, exitcode.Wrap(exitcode.Usage, err)
		}
	}
	return sel.Runtime, nil
}

// releaseProgress renders release.Run's stage events on w: a line when a
// stage starts, fails or was found done.
func releaseProgress(w io.Writer) func(release.Event) {
	return func(e release.Event) {
		switch {
		case e.Start:
			fmt.Fprintf(w, "==> %s: %s\n", e.Image, e.Stage)
		case e.Err != nil:
			fmt.Fprintf(w, "==> %s: %s FAILED after %s\n", e.Image, e.Stage, e.Elapsed.Round(time.Millisecond))
		case e.Resumed:
			fmt.Fprintf(w, "==> %s: %s already done\n", e.Image, e.Stage)
		}
	}
}

// openKey opens the private key of flag at path with the password that
// password returns (from the environment variables env names) and checks
// it against its public half pub.
func openKey(ctx context.Context, flag, path, pub string, password func() ([]byte, bool), env string) (signature.SignerVerifier, error) {
	pw, set := password()
	sv, err := sign.CheckKeyPair(ctx, pub, sign.WithKey(path, pw))
	if err == nil {
		return sv, nil
	}
	if !set {
		err = fmt.Errorf("%w; no password is set: set $%s", err, env)
	}
	return nil, exitcode.Wrap(exitcode.Usage, fmt.Errorf("%s %s: %w", flag, path, err))
}

func pubFor(pub, key string) string {
	if pub != "" {
		return pub
	}
	return strings.TrimSuffix(key, ".key") + ".pub"
}

// buildStatus renders each build's progress; with several jobs at once the
// plain mode keeps the interleaved lines readable.
func buildStatus(w io.Writer, f *releaseFlags) func(string) (chan *client.SolveStatus, func()) {
	mode := f.progress
	if f.jobs > 1 && mode == "auto" {
		mode = "plain"
	}
	var mu sync.Mutex // one tty display at a time, whatever --jobs
	exclusive := mode == string(progressui.TtyMode) || mode == string(progressui.AutoMode)
	return func(string) (chan *client.SolveStatus, func()) {
		ch := make(chan *client.SolveStatus)
		done := make(chan struct{})
		in := ch
		if exclusive {
			// A build waiting for the display keeps going: its status is
			// queued meanwhile, so BuildKit never blocks on its send.
			q := make(chan *client.SolveStatus)
			go queue(ch, q)
			in = q
		}
		go func() {
			defer close(done)
			if exclusive {
				mu.Lock()
				defer mu.Unlock()
			}
			d, err := progressui.NewDisplay(w, progressui.DisplayMode(mode))
			if err != nil {
				for range in {
				}
				return
			}
			_, _ = d.UpdateFrom(context.Background(), in)
		}()
		return ch, func() { <-done }
	}
}

// queue forwards everything from in to out, never blocking in's sender,
// and closes out after in is closed and drained.
func queue[T any](in <-chan T, out chan<- T) {
	defer close(out)
	var q []T
	for in != nil || len(q) > 0 {
		var send chan<- T
		var next T
		if len(q) > 0 {
			send, next = out, q[0]
		}
		select {
		case v, ok := <-in:
			if !ok {
				in = nil
				continue
			}
			q = append(q, v)
		case send <- next:
			q = q[1:]
		}
	}
}

func buildkitVersion(cmd *cobra.Command, c *client.Client) string {
	info, err := c.Info(cmd.Context())
	if err != nil || info == nil {
		return ""
	}
	return info.BuildkitVersion.Version
}

// writeReleaseOutcomes writes the outcomes as JSON rows or as a table.
func writeReleaseOutcomes(w io.Writer, outcomes []release.Outcome, asJSON bool) error {
	if !asJSON {
		return writeReleaseTable(w, outcomes)
	}
	if outcomes == nil {
		outcomes = []release.Outcome{}
	}
	return writeJSON(w, outcomes)
}

func writeReleaseTable(w io.Writer, outcomes []release.Outcome) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "IMAGE\tDIGEST\tSIZE\tCHANGED LAYERS\tVERIFY\tPROMOTED\tRESULT")
	for _, oc := range outcomes {
		result := "ok"
		if oc.Err != nil {
			result = "stopped at " + oc.FailedStage
		}
		changed := "-"
		switch {
		case oc.Digest != "" && oc.Previous == "":
			changed = "first release"
		case oc.Digest != "":
			changed = fmt.Sprintf("%d/%d (%s)", oc.Changed, oc.Layers, humanBytes(oc.Delta))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", oc.Image, short(oc.Digest), humanBytes(oc.Size),
			changed, oc.Result.Summary(), strings.Join(oc.Promoted.Tags, ","), result)
		for _, p := range oc.Platforms {
			changed := "-"
			if oc.Previous != "" {
				changed = fmt.Sprintf("%d/%d (%s)", p.Changed, p.Layers, humanBytes(p.Delta))
			}
			st := p.Verify
			if st == "" {
				st = "-"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t\t\n", p.Platform, short(p.Digest), humanBytes(p.Size), changed, st)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, oc := range outcomes {
		if oc.Err != nil {
			fmt.Fprintf(w, "%s: %v\n", oc.Image, oc.Err)
		} else if oc.Promoted.Reference != "" {
			fmt.Fprintf(w, "%s: pin %s (changelog %s)\n", oc.Image, oc.Promoted.Reference, oc.Promoted.Changelog)
		}
	}
	return nil
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// supportMonths are the images' policy support_months by name.
func supportMonths(imgs []spec.Image) map[string]int {
	m := map[string]int{}
	for _, i := range imgs {
		if i.Policy.SupportMonths > 0 {
			m[i.Name] = i.Policy.SupportMonths
		}
	}
	return m
}

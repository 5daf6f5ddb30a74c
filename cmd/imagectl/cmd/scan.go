package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/cobra"

	"imagectl/internal/auth"
	"imagectl/internal/exitcode"
	"imagectl/internal/monitoring"
	"imagectl/internal/scan"
	"imagectl/internal/scan/report"
)

// scanFlags are the database and VEX flags of the commands that scan.
type scanFlags struct {
	db       string
	maxDBAge time.Duration
	cacheDir string
	vex      []string
}

func (f *scanFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.db, "db", "", "vulnerability database: a grype v6 directory, a grype archive (.tar.gz/.tar.zst), or an OCI artifact REGISTRY/REPO@sha256:... (or :tag)")
	cmd.Flags().DurationVar(&f.maxDBAge, "max-db-age", scan.DefaultMaxDBAge, "refuse a database built longer ago than this")
	cmd.Flags().StringVar(&f.cacheDir, "db-cache", "", "where imported database archives are unpacked (default $XDG_CACHE_HOME/imagectl/vulndb)")
}

func (f *scanFlags) options(cmd *cobra.Command) ([]scan.Option, error) {
	if f.db == "" {
		return nil, exitcode.Wrap(exitcode.Usage, errors.New("a vulnerability database is needed: --db PATH|REF"))
	}
	opts := []scan.Option{scan.WithAccess(accessOf(cmd)), scan.WithMaxDBAge(f.maxDBAge)}
	if f.cacheDir != "" {
		opts = append(opts, scan.WithCacheDir(f.cacheDir))
	}
	for _, p := range f.vex {
		src, err := scan.LoadVEX(p)
		if err != nil {
			return nil, err
		}
		opts = append(opts, scan.WithVEX(src))
	}
	return opts, nil
}

func newScanCmd() *cobra.Command {
	var (
		rf       rescanFlags
		attest   bool
		releases string
	)
	cmd := &cobra.Command{
		Use:   "scan IMAGE@DIGEST",
		Short: "Match an image's signed SBOM against an offline vulnerability database (grype)",
		Long: `Scan verifies IMAGE@DIGEST's CycloneDX SBOM attestation with --key (the
signer's public key: cosign verify-attestation --type cyclonedx), then matches
its packages (the base's dpkg packages, the locked debs, the wheels) against
the vulnerability database with grype, offline. The table lists ID, package,
installed version, fixed-in versions, severity and the advisory source; -o json
prints the whole result.

The database (--db) is a grype v6 database directory, a grype archive, or an
OCI artifact in the platform's registry (pulled by digest with the registry
credentials, like the bases). One built longer ago than --max-db-age (default
120h, grype's own limit) is refused, naming its build date.

--vex applies OpenVEX documents: a finding a not_affected or fixed statement
covers for the image (product pkg:oci/NAME) is reported as suppressed.

With --attest and --signing-key the result is signed as cosign's vuln
attestation (` + scan.VulnPredicateType + `):
  cosign verify-attestation --key cosign.pub --insecure-ignore-tlog --type vuln IMAGE@DIGEST

imagectl scan releases IMAGES_DIR is the daily re-scan of what users pinned.`,
		Example: `  imagectl scan reg/imagectl/demo@sha256:... --key keys/cosign.pub --db reg/imagectl/grype-db:latest
  imagectl scan reg/imagectl/demo@sha256:... --key keys/cosign.pub --db ./vulnerability-db_v6.1.10.tar.zst -o json
  imagectl scan reg/imagectl/demo@sha256:... --key keys/cosign.pub --db DB --vex images/demo/vex.json \
      --attest --signing-key keys/cosign.key
  imagectl scan releases images/ --spec specs/ --db reg/imagectl/grype-db:latest \
      --key keys/cosign.pub --signing-key keys/cosign.key \
      --metrics-file /var/lib/node_exporter/textfile/imagectl-rescan.prom   # the daily job`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if releases != "" { // the spelling of an earlier release
				if len(args) > 0 {
					return exitcode.Wrap(exitcode.Usage, errors.New("--releases takes no IMAGE@DIGEST"))
				}
				return runRescan(cmd, releases, &rf)
			}
			if rf.metrics.file != "" || rf.metrics.pushgateway != "" {
				return exitcode.Wrap(exitcode.Usage, errors.New("--metrics-file and --pushgateway are for imagectl scan releases"))
			}
			if len(args) != 1 {
				return exitcode.Wrap(exitcode.Usage, errors.New("want IMAGE@DIGEST (or imagectl scan releases IMAGES_DIR)"))
			}
			ref, err := parseDigest(args[0])
			if err != nil {
				return err
			}
			asJSON, err := rf.out.json()
			if err != nil {
				return err
			}
			opts, err := rf.scan.options(cmd)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			db, err := scan.OpenDB(ctx, rf.scan.db, opts...)
			if err != nil {
				return err
			}
			defer db.Close()
			r, err := scan.Image(ctx, ref, rf.pubKey, db, opts...)
			if err != nil {
				return err
			}
			if attest {
				signOpts, err := rf.sign.options(cmd, cmd.InOrStdin())
				if err != nil {
					return err
				}
				if err := scan.Attest(ctx, ref, r, signOpts...); err != nil {
					return err
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "attested %s (%s)\n", ref, scan.VulnPredicateType)
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), r)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "%s: %d packages, %d findings (%d suppressed by VEX); database %s built %s\n",
				ref, r.Packages, len(r.Findings), len(r.Findings)-len(r.Active()), db.Source, db.Built.UTC().Format(time.RFC3339))
			return r.WriteTable(cmd.OutOrStdout())
		},
	}
	rf.add(cmd)
	cmd.Flags().StringSliceVar(&rf.scan.vex, "vex", nil, "OpenVEX document(s) whose not_affected/fixed statements suppress findings (repeatable)")
	cmd.Flags().BoolVar(&attest, "attest", false, "sign the result as a vuln attestation of the image (needs --signing-key or --kms)")
	cmd.Flags().StringVar(&releases, "releases", "", "re-scan every promoted digest of IMAGES_DIR/*/releases.json and attest the results (needs --signing-key)")
	deprecateFlags(cmd, map[string]string{"releases": "imagectl scan releases IMAGES_DIR"})
	for _, n := range []string{"metrics-file", "pushgateway", "spec"} { // only with --releases
		_ = cmd.Flags().MarkHidden(n)
	}
	cmd.AddCommand(newScanReleasesCmd())
	cmd.AddCommand(newPushDBCmd())
	return cmd
}

func newPushDBCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "push-db ARCHIVE REF",
		Short: "Publish a grype v6 database archive as an OCI artifact (what scan --db REF pulls)",
		Long: `push-db opens ARCHIVE (a grype v6 .tar.gz or .tar.zst, e.g. from grype db
download on a machine with internet access) to check it is a database, then
pushes it to REF as an OCI artifact: one layer, the archive; the manifest's
annotations name its build date and schema. The digest is printed on stdout.
imagectl mirror artifact copies it to another registry by digest.`,
		Example: `  imagectl scan push-db vulnerability-db_v6.1.10_2026-12-01T05:00:00Z_1764565200.tar.zst reg/platform/grype-db:latest`,
		Args:    usageArgs(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := name.ParseReference(args[1], accessOf(cmd).NameOptions(auth.RegistryOf(args[1]))...)
			if err != nil {
				return exitcode.Wrap(exitcode.Usage, fmt.Errorf("%q: %w", args[1], err))
			}
			d, err := scan.PushDB(cmd.Context(), args[0], ref, scan.WithAccess(accessOf(cmd)))
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), ref.Context().Digest(d.String()).String())
			return nil
		},
	}
}

// rescanFlags are the flags of scan releases (and of scan, which shares
// all but the metrics and the specs).
type rescanFlags struct {
	scan    scanFlags
	sign    signFlags
	out     outputFlag
	pubKey  string
	metrics metricsFlags
	specs   []string
	spec    specFlags
}

func (f *rescanFlags) add(cmd *cobra.Command) {
	f.scan.add(cmd)
	addOutputFlag(cmd, &f.out)
	fl := cmd.Flags()
	fl.StringVar(&f.pubKey, "key", "keys/cosign.pub", "the signer's public key: the SBOM attestation must verify with it")
	fl.StringVar(&f.sign.key, "signing-key", "", "cosign private key that signs the vuln attestations (password from $IMAGECTL_SIGNING_PASSWORD, $COSIGN_PASSWORD or --password-stdin)")
	fl.StringVar(&f.sign.kms, "kms", "", "KMS key URI instead of --signing-key")
	fl.BoolVar(&f.sign.passwordStdin, "password-stdin", false, "read the signing key password from the first line of stdin")
	fl.StringVar(&f.metrics.file, "metrics-file", "", "re-scan: write Prometheus metrics here (textfile collector format)")
	fl.StringVar(&f.metrics.pushgateway, "pushgateway", "", "re-scan: push the metrics to this Pushgateway URL (job "+monitoring.JobRescan+")")
	fl.StringSliceVar(&f.specs, "spec", nil, "re-scan: spec file(s) or directory whose policy { vulnerabilities { ... } } decide the exit code")
	f.spec.add(cmd)
}

func newScanReleasesCmd() *cobra.Command {
	var f rescanFlags
	cmd := &cobra.Command{
		Use:   "releases IMAGES_DIR",
		Short: "Re-scan every promoted release with today's database and attest the results (the daily job)",
		Long: `Releases is the daily re-scan of what users pinned: every promoted digest of
IMAGES_DIR/*/releases.json (in its release repository; of an image index, each
platform image) is scanned with today's database (each image's
images/NAME/vex.json applied), the new result is attested (--signing-key), and
what is new since the last signed scan is printed per image and month. A
release whose support window has ended (support_end in the release file) is
listed as out of support and neither scanned nor attested again. With --spec,
the images' policy { vulnerabilities { ... } } decide: exit 5 when anything
new breaks one, 0 otherwise. --metrics-file (node_exporter's textfile
collector) or --pushgateway gets the findings by severity, the new ones, and
whether the re-scan went through: the metrics imagectl monitoring render's
rules alert on (docs/monitoring.md).`,
		Example: `  imagectl scan releases images/ --spec specs/ --db reg/imagectl/grype-db:latest \
      --key keys/cosign.pub --signing-key keys/cosign.key \
      --metrics-file /var/lib/node_exporter/textfile/imagectl-rescan.prom   # the daily job
  imagectl scan releases images/ --db ./vulnerability-db_v6.1.10.tar.zst --key keys/cosign.pub \
      --signing-key keys/cosign.key -o json`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error { return runRescan(cmd, args[0], &f) },
	}
	f.add(cmd)
	return cmd
}

// metricsFlags are where scan releases sends its metrics.
type metricsFlags struct{ file, pushgateway string }

// write sends the re-scan's metrics (res, and err as the re-scan's
// outcome) where the flags say.
func (m metricsFlags) write(ctx context.Context, res []scan.Rescan, err error) error {
	now := time.Now()
	var errs []error
	if m.file != "" {
		if werr := scan.WriteRescanTextfile(m.file, res, err, now); werr != nil {
			errs = append(errs, werr)
		}
	}
	if m.pushgateway != "" {
		if perr := scan.PushRescan(ctx, m.pushgateway, res, err, now); perr != nil {
			errs = append(errs, perr)
		}
	}
	return errors.Join(errs...)
}

// runRescan re-scans dir's releases with the database and prints what is
// new, as a table or as JSON.
func runRescan(cmd *cobra.Command, dir string, f *rescanFlags) error {
	if len(f.scan.vex) > 0 {
		return exitcode.Wrap(exitcode.Usage, errors.New("the re-scan applies each image's images/NAME/vex.json; --vex is for one image"))
	}
	asJSON, err := f.out.json()
	if err != nil {
		return err
	}
	opts, err := f.scan.options(cmd)
	if err != nil {
		return err
	}
	signOpts, err := f.sign.options(cmd, cmd.InOrStdin())
	if err != nil {
		return err
	}
	policies := map[string]report.Policy{}
	if len(f.specs) > 0 {
		imgs, err := loadImages(cmd, f.spec, f.specs, nil)
		if err != nil {
			return err
		}
		for _, img := range imgs {
			if v := img.Policy.Vulnerabilities; v != nil {
				policies[img.Name] = report.PolicyOf(v)
			}
		}
	}
	db, err := scan.OpenDB(cmd.Context(), f.scan.db, opts...)
	if err != nil {
		return err
	}
	defer db.Close()
	res, err := scan.Releases(cmd.Context(), dir, f.pubKey, db, policies, signOpts, opts...)
	// The metrics say whether the re-scan went through: written also when
	// it did not (a metrics failure never hides the re-scan's own).
	if merr := f.metrics.write(cmd.Context(), res, err); merr != nil {
		err = errors.Join(err, merr)
	}
	var be *scan.BreaksPolicyError
	if err != nil && !errors.As(err, &be) {
		return err
	}
	if asJSON {
		if res == nil {
			res = []scan.Rescan{}
		}
		if werr := writeJSON(cmd.OutOrStdout(), res); werr != nil {
			return werr
		}
		return err
	}
	if werr := writeRescanTable(cmd.OutOrStdout(), res); werr != nil {
		return werr
	}
	return err
}

func writeRescanTable(out io.Writer, res []scan.Rescan) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "IMAGE\tMONTH\tDIGEST\tFINDINGS\tNEW\tBREAKING")
	for _, r := range res {
		var ids []string
		for _, f := range r.New {
			ids = append(ids, f.ID+" ("+f.Package+" "+f.Installed+")")
		}
		newCol := "-"
		if len(ids) > 0 {
			newCol = strings.Join(ids, ", ")
		}
		digest := r.Digest
		if r.Platform != "" {
			digest += " (" + r.Platform + ")"
		}
		if r.Expired != "" {
			fmt.Fprintf(w, "%s\t%s\t%s\t-\tout of support since %s: not scanned\t-\n", r.Image, r.Month, digest, r.Expired)
			continue
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%d\n", r.Image, r.Month, digest, r.Findings, newCol, len(r.Breaking))
	}
	return w.Flush()
}

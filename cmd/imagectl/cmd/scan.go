package cmd

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"imagectl/internal/exitcode"
	"imagectl/internal/scan"
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
	cmd.Flags().StringSliceVar(&f.vex, "vex", nil, "OpenVEX document(s) whose not_affected/fixed statements suppress findings (repeatable)")
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
		sf     scanFlags
		sign   signFlags
		out    outputFlag
		pubKey string
		attest bool
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
  cosign verify-attestation --key cosign.pub --insecure-ignore-tlog --type vuln IMAGE@DIGEST`,
		Example: `  imagectl scan reg/imagectl/demo@sha256:... --key keys/cosign.pub --db reg/imagectl/grype-db:latest
  imagectl scan reg/imagectl/demo@sha256:... --key keys/cosign.pub --db ./vulnerability-db_v6.1.10.tar.zst -o json
  imagectl scan reg/imagectl/demo@sha256:... --key keys/cosign.pub --db DB --vex images/demo/vex.json \
      --attest --signing-key keys/cosign.key`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := parseDigest(args[0])
			if err != nil {
				return err
			}
			asJSON, err := out.json()
			if err != nil {
				return err
			}
			opts, err := sf.options(cmd)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			db, err := scan.OpenDB(ctx, sf.db, opts...)
			if err != nil {
				return err
			}
			defer db.Close()
			r, err := scan.Image(ctx, ref, pubKey, db, opts...)
			if err != nil {
				return err
			}
			if attest {
				signOpts, err := sign.options(cmd, cmd.InOrStdin())
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
	sf.add(cmd)
	addOutputFlag(cmd, &out)
	cmd.Flags().StringVar(&pubKey, "key", "keys/cosign.pub", "the signer's public key: the SBOM attestation must verify with it")
	cmd.Flags().BoolVar(&attest, "attest", false, "sign the result as a vuln attestation of the image (needs --signing-key or --kms)")
	cmd.Flags().StringVar(&sign.key, "signing-key", "", "cosign private key for --attest (password from $IMAGECTL_SIGNING_PASSWORD, $COSIGN_PASSWORD or --password-stdin)")
	cmd.Flags().StringVar(&sign.kms, "kms", "", "KMS key URI for --attest instead of --signing-key")
	cmd.Flags().BoolVar(&sign.passwordStdin, "password-stdin", false, "read the signing key password from the first line of stdin")
	return cmd
}

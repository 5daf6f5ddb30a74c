package cmd

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/cobra"

	"imagectl/internal/exitcode"
	"imagectl/internal/lock"
	"imagectl/internal/sign"
)

// signFlags are the key flags of every command that signs.
type signFlags struct {
	key           string
	kms           string
	passwordStdin bool
}

func (f *signFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.key, "key", "", "cosign private key file (encrypted; password from $"+sign.PasswordEnv+", $"+sign.CosignPasswordEnv+" or --password-stdin)")
	cmd.Flags().StringVar(&f.kms, "kms", "", "KMS key URI instead of --key (awskms://, gcpkms://, azurekms://, hashivault://; only providers built in)")
	cmd.Flags().BoolVar(&f.passwordStdin, "password-stdin", false, "read the key password from the first line of stdin")
}

// options returns the signing options; the password is never printed.
func (f *signFlags) options(cmd *cobra.Command, stdin io.Reader) ([]sign.Option, error) {
	access := sign.WithAccess(accessOf(cmd))
	switch {
	case f.key != "" && f.kms != "":
		return nil, exitcode.Wrap(exitcode.Usage, errors.New("--key and --kms exclude each other"))
	case f.kms != "":
		return []sign.Option{sign.WithKMS(f.kms), access}, nil
	case f.key == "":
		return nil, exitcode.Wrap(exitcode.Usage, errors.New("a signing key is needed: --key cosign.key or --kms URI"))
	}
	pw, err := readPassword(f.passwordStdin, stdin)
	if err != nil {
		return nil, err
	}
	return []sign.Option{sign.WithKey(f.key, pw), access}, nil
}

func readPassword(fromStdin bool, stdin io.Reader) ([]byte, error) {
	if fromStdin {
		line, err := bufio.NewReader(stdin).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("reading the key password from stdin: %w", err)
		}
		return []byte(strings.TrimRight(line, "\r\n")), nil
	}
	if pw, ok := sign.PasswordFromEnv(); ok {
		return pw, nil
	}
	return nil, exitcode.Wrap(exitcode.Usage, fmt.Errorf("no key password: set $%s (or $%s), or pass --password-stdin", sign.PasswordEnv, sign.CosignPasswordEnv))
}

func parseDigest(s string) (name.Digest, error) {
	d, err := name.NewDigest(s, name.StrictValidation)
	if err != nil {
		return name.Digest{}, exitcode.Wrap(exitcode.Usage, fmt.Errorf("%q: want IMAGE@sha256:<digest>, never a tag: %w", s, err))
	}
	return d, nil
}

func newSignCmd() *cobra.Command {
	var (
		sf       signFlags
		lockPath string
		builder  sign.Builder
		predType string
		predFile string
	)
	cmd := &cobra.Command{
		Use:   "sign IMAGE@DIGEST",
		Short: "Sign an image digest and attach its lock, SBOM (SPDX, CycloneDX) and SLSA provenance attestations",
		Long: `Sign writes a cosign signature for IMAGE@DIGEST (tag sha256-<hex>.sig in the
image's repository) with a cosign key file or a KMS key. With --lock it also
attaches four signed in-toto attestations (tag sha256-<hex>.att):

  ` + sign.LockPredicateType + `   the lock file
  ` + sign.SPDXPredicateType + `                  SPDX 2.3 SBOM: every package in the image (the base's
                                             dpkg database, the locked debs and wheels with their
                                             sha256, the lock's pip, the init), with package URLs
  ` + sign.CycloneDXPredicateType + `                  CycloneDX 1.6 SBOM of the same packages (cosign
                                             --type cyclonedx): the image as metadata.component
  ` + sign.ProvenancePredicateType + `             SLSA provenance: builder, BuildKit, lock digest, spec, commit
                                             (--source-commit: the full hash)

The SBOM is read from the image's layers (once, for both formats), so
IMAGE@DIGEST must be the image built from the lock. For an image index each
platform's image gets its own signature and the four attestations; the index
gets its signature, the lock and the provenance. What the digest already
carries, verified with the key, is kept: signing again writes nothing, and
after an interrupted run only the missing attestations are written.

Signing is offline: nothing goes to a transparency log (air-gapped
platforms). The stock cosign CLI verifies the result:

  cosign verify --key cosign.pub --insecure-ignore-tlog IMAGE@DIGEST
  cosign verify-attestation --key cosign.pub --insecure-ignore-tlog --type URL IMAGE@DIGEST
  cosign verify-attestation --key cosign.pub --insecure-ignore-tlog --type cyclonedx IMAGE@DIGEST

The key password comes from $` + sign.PasswordEnv + `, $` + sign.CosignPasswordEnv + ` or
--password-stdin, and is never printed. The digest is printed on stdout.`,
		Example: `  imagectl sign generate-key-pair --dir keys
  IMAGECTL_SIGNING_PASSWORD=... imagectl sign reg/staging/pytorch@sha256:... --key keys/cosign.key \
      --lock images/pytorch-2.6-cu124/lock.json --buildkit-version v0.34.2 --source-commit $(git rev-parse HEAD)
  imagectl sign reg/staging/pytorch@sha256:... --kms hashivault://imagectl
  imagectl sign reg/staging/pytorch@sha256:... --key keys/cosign.key --type https://example.com/x/v1 --predicate x.json`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := parseDigest(args[0])
			if err != nil {
				return err
			}
			if (predType == "") != (predFile == "") {
				return exitcode.Wrap(exitcode.Usage, errors.New("--type and --predicate go together"))
			}
			opts, err := sf.options(cmd, cmd.InOrStdin())
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if lockPath != "" {
				l, err := lock.Read(lockPath)
				if err != nil {
					return err
				}
				if err := sign.SignAndAttest(ctx, ref, l, builder, opts...); err != nil {
					return err
				}
			} else if err := sign.Sign(ctx, ref, opts...); err != nil {
				return err
			}
			if predType != "" {
				pred, err := os.ReadFile(predFile)
				if err != nil {
					return err
				}
				if err := sign.Attest(ctx, ref, predType, pred, opts...); err != nil {
					return err
				}
			}
			fmt.Fprintln(cmd.ErrOrStderr(), "signed offline (no transparency log): verify with cosign verify --key <pub> --insecure-ignore-tlog")
			fmt.Fprintln(cmd.OutOrStdout(), ref.String())
			return nil
		},
	}
	sf.add(cmd)
	cmd.Flags().StringVar(&lockPath, "lock", "", "attach the lock, SPDX, CycloneDX and provenance attestations built from this lock file")
	cmd.Flags().StringVar(&builder.ID, "builder-id", sign.DefaultBuilderID, "provenance: builder ID (URI)")
	cmd.Flags().StringVar(&builder.BuildKitVersion, "buildkit-version", "", "provenance: version of the buildkitd that built the image")
	cmd.Flags().StringVar(&builder.SourceRepo, "source-repo", "", "provenance: git repository of the spec and lock")
	cmd.Flags().StringVar(&builder.SourceCommit, "source-commit", "", "provenance: git commit of the spec and lock")
	cmd.Flags().StringVar(&predType, "type", "", "also attach a custom attestation of this predicate type (URL)")
	cmd.Flags().StringVar(&predFile, "predicate", "", "the JSON predicate file for --type")
	cmd.AddCommand(newGenerateKeyPairCmd())
	return cmd
}

func newGenerateKeyPairCmd() *cobra.Command {
	var (
		dir           string
		passwordStdin bool
	)
	cmd := &cobra.Command{
		Use:   "generate-key-pair",
		Short: "Write a cosign-compatible key pair (cosign.key, encrypted, and cosign.pub)",
		Long: `generate-key-pair writes an ECDSA P-256 key pair in cosign's format into
--dir: cosign.key (mode 0600, encrypted with the password from
$` + sign.PasswordEnv + `, $` + sign.CosignPasswordEnv + ` or --password-stdin) and cosign.pub.
It never overwrites a key. The public key's path is printed on stdout.`,
		Example: `  IMAGECTL_SIGNING_PASSWORD=... imagectl sign generate-key-pair --dir keys`,
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			pw, err := readPassword(passwordStdin, cmd.InOrStdin())
			if err != nil {
				return err
			}
			priv, pub, err := sign.GenerateKeyPair(dir, pw)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "private key: %s (keep it secret)\n", priv)
			fmt.Fprintln(cmd.OutOrStdout(), pub)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", ".", "directory for cosign.key and cosign.pub")
	cmd.Flags().BoolVar(&passwordStdin, "password-stdin", false, "read the password from the first line of stdin")
	return cmd
}

package cmd

import (
	"fmt"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/cobra"

	"imagectl/internal/atomicfile"
	"imagectl/internal/exitcode"
	"imagectl/internal/policy"
	"imagectl/internal/spec"
)

func newPolicyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Admission policies that make a cluster refuse images imagectl did not sign and verify",
	}
	cmd.AddCommand(newPolicyRenderCmd())
	return cmd
}

func newPolicyRenderCmd() *cobra.Command {
	var (
		sf                       specFlags
		format, key, verifierKey string
		outPath, policyName      string
		output                   string
		repos, images            []string
		requireVuln              bool
		vulnMaxAge               time.Duration
	)
	cmd := &cobra.Command{
		Use:   "render [spec paths...] --format policy-controller|kyverno",
		Short: "Write a ClusterImagePolicy or Kyverno ClusterPolicy for the release repositories",
		Long: `Render writes the admission policy for the release repositories (repos.release
of the images in the specs, or --repo): a sigstore policy-controller
ClusterImagePolicy (--format policy-controller) or a Kyverno ClusterPolicy
(--format kyverno). It admits an image of those repositories only when its
digest carries
  - a cosign signature by the signer key (--key), AND
  - an in-toto test-result attestation
    (https://in-toto.io/attestation/test-result/v0.1, written by imagectl
    verify) with result PASSED, signed by the verifier key (--verifier-key),
    whose subject is that digest;
and, with --require-vuln-scan, a cosign vulnerability attestation
(https://cosign.sigstore.dev/attestation/vuln/v1) by the signer key whose scan
finished within --vuln-max-age.

Public keys only: the policies check no transparency log, Fulcio or TUF, so
they work in an air-gapped cluster. The YAML goes to stdout, or atomically to
the file --output-file names. docs/security.md says how to install each engine and apply
the policy. Paths are spec files or directories (the default is specs/);
--repo adds repositories, and alone needs no spec.`,
		Example: `  imagectl policy render --format policy-controller > cip.yaml
  imagectl policy render specs/pytorch.hcl --format kyverno --key keys/cosign.pub --verifier-key keys/verifier.pub --output-file kyverno-policy.yaml
  imagectl policy render --format kyverno --image demo --var registry=registry.example:5000
  imagectl policy render --format policy-controller --repo registry.example/ml/pytorch --require-vuln-scan --vuln-max-age 48h
  kubectl apply -f <(imagectl policy render --format policy-controller)`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if format == "" {
				return exitcode.Wrap(exitcode.Usage, fmt.Errorf("--format is required: policy-controller or kyverno"))
			}
			f, err := policy.ParseFormat(format)
			if err != nil {
				return exitcode.Wrap(exitcode.Usage, fmt.Errorf("--format: %w", err))
			}
			if cmd.Flags().Changed("vuln-max-age") && !requireVuln {
				return exitcode.Wrap(exitcode.Usage, fmt.Errorf("--vuln-max-age needs --require-vuln-scan"))
			}
			switch output {
			case "yaml", "":
			case "json", "human":
				return exitcode.Wrap(exitcode.Usage, fmt.Errorf("-o %q: policy render writes yaml (what kubectl apply reads); the policy's kind is --format", output))
			default:
				// The spelling of an earlier release: -o FILE.
				if outPath != "" {
					return exitcode.Wrap(exitcode.Usage, fmt.Errorf("-o %q: want yaml; the file is --output-file", output))
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "-o FILE is deprecated, use --output-file %s\n", output)
				outPath = output
			}
			if err := policy.CheckName(policyName); err != nil {
				return exitcode.Wrap(exitcode.Usage, fmt.Errorf("--name: %w", err))
			}
			rs, err := policyRepos(cmd, sf, args, images, repos)
			if err != nil {
				return err
			}
			opts := []policy.Option{policy.WithName(policyName), policy.WithKeyFile(key), policy.WithVerifierKeyFile(verifierKey)}
			if requireVuln {
				opts = append(opts, policy.WithVulnMaxAge(vulnMaxAge))
			}
			b, err := policy.Render(f, rs, opts...)
			if err != nil {
				return err
			}
			if outPath == "" || outPath == "-" {
				_, err = cmd.OutOrStdout().Write(b)
				return err
			}
			return atomicfile.Write(outPath, b, 0o644)
		},
	}
	fl := cmd.Flags()
	sf.add(cmd)
	fl.StringVar(&format, "format", "", "policy-controller or kyverno (required)")
	fl.StringVar(&key, "key", "keys/cosign.pub", "the signer's public key: signatures (and vulnerability attestations)")
	fl.StringVar(&verifierKey, "verifier-key", "keys/verifier.pub", "the verifier's public key: test-result attestations")
	fl.StringArrayVar(&repos, "repo", nil, "a release repository (registry/path) to cover (repeatable); without spec paths no spec is read")
	fl.StringArrayVar(&images, "image", nil, "cover only this image of the specs (repeatable); the default is every image")
	fl.BoolVar(&requireVuln, "require-vuln-scan", false, "also require a vulnerability attestation by the signer key")
	fl.DurationVar(&vulnMaxAge, "vuln-max-age", 168*time.Hour, "with --require-vuln-scan: the oldest scan admitted")
	fl.StringVarP(&output, "output", "o", "yaml", "output format: yaml")
	fl.StringVar(&outPath, "output-file", "", "write the policy to this file (atomically) instead of stdout")
	fl.StringVar(&policyName, "name", policy.DefaultName, "the policy's metadata.name")
	return cmd
}

// policyRepos are the repositories --repo names and, unless only --repo
// was given, the release repositories of the specs' (selected) images.
func policyRepos(cmd *cobra.Command, sf specFlags, args, images, repos []string) ([]name.Repository, error) {
	extra, err := policy.ParseRepositories(repos)
	if err != nil {
		return nil, exitcode.Wrap(exitcode.Usage, fmt.Errorf("--repo: %w", err))
	}
	if len(repos) > 0 && len(args) == 0 && len(images) == 0 {
		return extra, nil
	}
	opts, err := sf.options()
	if err != nil {
		return nil, err
	}
	imgs, err := spec.Load(cmd.Context(), specPaths(args), opts...)
	if err != nil {
		return nil, pathError(err)
	}
	if imgs, err = spec.Select(imgs, images); err != nil {
		return nil, exitcode.Wrap(exitcode.Usage, err)
	}
	rs, err := policy.ReleaseRepositories(imgs)
	if err != nil {
		return nil, err
	}
	var all []string
	for _, r := range append(rs, extra...) {
		all = append(all, r.Name())
	}
	return policy.ParseRepositories(all)
}

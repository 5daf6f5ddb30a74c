package cmd

import (
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/cobra"

	"imagectl/internal/catalog"
)

func newCatalogCmd() *cobra.Command {
	var (
		tf        trustFlags
		outDir    string
		imagesDir string
	)
	cmd := &cobra.Command{
		Use:   "catalog REPOSITORY... --out DIR",
		Short: "Write the static catalog site users browse: image lines, releases, pins, contents, CVEs, GPU verification",
		Long: `Catalog writes a static site to --out from the registry: for each release
repository (an image line) its releases (tags, digest, month, support end), a
copyable pin line, the contents the signed lock attests (torch, CUDA, Python,
NCCL, cuDNN, driver floor, package counts), the size of each platform's image,
the CVE status of the newest signed scan (VEX applied), the signed GPU
verification (GPU model, driver, all-reduce bus bandwidth, torch.compile cold
and warm) and the changelog (each release against the one before, from the
signed SBOMs and scans). Every fact is read from an attestation verified under
the platform's public keys (--key/--verifier-key, else keys/,
$IMAGECTL_KEYS_DIR or ~/.config/imagectl/keys).

The site is plain HTML and CSS, no JavaScript: index.html, lines/NAME.html,
style.css, and the same data as catalog.json and lines/NAME.json. It is
written to a temporary folder and swapped in whole. --images adds the
platform's release files (images/*/releases.json): image names and support
ends the registry lacks.`,
		Example: `  imagectl catalog registry.example/ml/pytorch-2.6-cu121-py3.11 registry.example/ml/demo --out site/
  imagectl catalog registry.example/ml/demo --images images --out /srv/www/catalog`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if outDir == "" {
				return usageErr("catalog: --out DIR is required")
			}
			var repos []name.Repository
			for _, a := range args {
				r, err := name.NewRepository(a, name.StrictValidation)
				if err != nil {
					return usageErr("catalog: %q: %v", a, err)
				}
				repos = append(repos, r)
			}
			dopts, err := tf.discoverOptions(cmd)
			if err != nil {
				return err
			}
			opts := []catalog.Option{catalog.WithDiscoverOptions(dopts...)}
			if imagesDir != "" {
				opts = append(opts, catalog.WithReleaseFiles(imagesDir))
			}
			site, err := catalog.Build(cmd.Context(), repos, opts...)
			if err != nil {
				return err
			}
			if err := catalog.Write(outDir, site); err != nil {
				return err
			}
			n := 0
			for _, l := range site.Lines {
				n += len(l.Releases)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "catalog: %d line(s), %d release(s) written to %s\n", len(site.Lines), n, outDir)
			return nil
		},
	}
	tf.add(cmd)
	cmd.Flags().StringVar(&outDir, "out", "", "the site's folder (replaced whole)")
	cmd.Flags().StringVar(&imagesDir, "images", "", "the platform's images folder: release files add image names and support ends")
	return cmd
}

package cmd

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"imagectl/internal/exitcode"
	"imagectl/internal/spec"
)

func newPrintCmd() *cobra.Command {
	var sf specFlags
	var out outputFlag
	var only string
	cmd := &cobra.Command{
		Use:   "print [paths...]",
		Short: "Print the concrete images the specs resolve to",
		Long: `Print decodes the specs (like lint) and prints every concrete image: defaults
applied, variables and functions evaluated, one image per matrix combination,
with the pins the compatibility catalog decides (torch variant, NCCL, cuDNN).

Paths are spec files or directories of *.hcl files; the default is specs/.`,
		Example: `  imagectl print
  imagectl print specs/ --output json
  imagectl print --image pytorch-2.6-cu121-py3.11 specs/`,
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := out.json()
			if err != nil {
				return err
			}
			opts, err := sf.options()
			if err != nil {
				return err
			}
			imgs, err := spec.Load(cmd.Context(), specPaths(args), opts...)
			var de *spec.DiagnosticsError
			if errors.As(err, &de) {
				if werr := de.WriteText(cmd.ErrOrStderr(), 100, false); werr != nil {
					return werr
				}
				return exitcode.Wrap(exitcode.Failure, fmt.Errorf("print: %s in the specs", plural(len(de.List()), "problem")))
			}
			if err != nil {
				return pathError(err)
			}
			if only != "" {
				if imgs, err = spec.Select(imgs, []string{only}); err != nil {
					return exitcode.Wrap(exitcode.Usage, fmt.Errorf("--image: %w", err))
				}
			}
			if asJSON {
				if imgs == nil {
					imgs = []spec.Image{}
				}
				return writeJSON(cmd.OutOrStdout(), imgs)
			}
			return writeImages(cmd.OutOrStdout(), imgs)
		},
	}
	sf.add(cmd)
	addOutputFlag(cmd, &out)
	cmd.Flags().StringVar(&only, "image", "", "print only the image with this name")
	return cmd
}

// writeImages renders images for people: one block per image.
func writeImages(w io.Writer, imgs []spec.Image) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for i, img := range imgs {
		if i > 0 {
			fmt.Fprintln(tw)
		}
		fmt.Fprintf(tw, "%s\t(%s:%d)\n", img.Name, img.File, img.Line)
		row := func(k, v string) {
			if v != "" {
				fmt.Fprintf(tw, "  %s\t%s\n", k, v)
			}
		}
		row("base", img.Base)
		row("python", img.Python)
		row("cuda", img.CUDA)
		if img.Torch != "" {
			row("torch", img.Torch+"+"+img.TorchVariant)
		}
		row("nccl", img.NCCL)
		row("cudnn", img.CUDNN)
		row("driver floor", img.DriverFloor)
		row("apt", strings.Join(img.Apt, " "))
		row("pip", strings.Join(img.Pip, " "))
		row("frozen", strings.Join(img.Frozen, " "))
		row("staging", img.Repos.Staging)
		row("release", img.Repos.Release)
	}
	return tw.Flush()
}

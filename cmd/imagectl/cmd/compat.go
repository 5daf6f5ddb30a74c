package cmd

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"imagectl/internal/compat"
)

func newCompatCmd() *cobra.Command {
	var out outputFlag
	var torch, cuda string
	cmd := &cobra.Command{
		Use:   "compat",
		Short: "Show and query the compatibility catalog",
		Long: `Compat shows the embedded compatibility catalog: the CUDA variants each torch
release publishes with the NCCL and cuDNN versions they pin, the torch family
released with it (torchvision, torchaudio: what lint fills in), the Python
versions and GPU architectures they are built for, and the NVIDIA driver
floor of each CUDA toolkit, natively and under minor-version compatibility.
Every row names its source.

With --cuda, only the wheels that can run on a base of that CUDA version are
listed, with how (native, minor-version compatibility) and the driver they
need. With --torch and --cuda and no matching wheel, the choices are named.`,
		Example: `  imagectl compat
  imagectl compat --torch 2.6.0
  imagectl compat --torch 2.6.0 --cuda 12.1
  imagectl compat --cuda 11.8 --output json`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, err := out.json()
			if err != nil {
				return err
			}
			ans, err := compat.Query(torch, cuda)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), ans)
			}
			return writeCompat(cmd.OutOrStdout(), ans)
		},
	}
	cmd.Flags().StringVar(&torch, "torch", "", "torch release, e.g. 2.6.0")
	cmd.Flags().StringVar(&cuda, "cuda", "", "CUDA version of the base image, e.g. 12.1")
	addOutputFlag(cmd, &out)
	return cmd
}

func writeCompat(w io.Writer, ans compat.Answer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TORCH\tVARIANT\tCUDA\tNCCL\tCUDNN\tFAMILY\tPYTHON\tARCHS\tPLATFORMS\tMODE\tMIN DRIVER")
	for _, m := range ans.Wheels {
		var family []string
		for _, p := range m.Family {
			family = append(family, p.Package+" "+p.Version)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", m.Torch, m.Variant, dash(m.CUDA),
			dash(pinVersion(m.NCCL)), dash(pinVersion(m.CUDNN)), dash(strings.Join(family, ", ")), pyRange(m.Python),
			dash(archRange(m.Archs)), strings.Join(m.Platforms, ","), dash(m.Mode), dash(m.MinDriver))
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "CUDA\tDRIVER (NATIVE)\tDRIVER (MINOR-VERSION COMPAT)")
	for _, f := range ans.DriverFloors {
		fmt.Fprintf(tw, "%s\t>= %s\t>= %s\n", f.CUDA, f.Native, f.MinorCompat)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range ans.Problems {
		fmt.Fprintf(w, "\n%s.\n%s\n", p.Summary, p.Detail)
	}
	fmt.Fprintf(w, "\ncatalog %s (sources: imagectl compat -o json)\n", ans.Digest)
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func pinVersion(p *compat.Pin) string {
	if p == nil {
		return ""
	}
	return p.Version
}

func pyRange(vs []string) string {
	if len(vs) == 0 {
		return "-"
	}
	return vs[0] + "-" + vs[len(vs)-1]
}

// archRange is "75..120": the lowest and highest architecture by compute
// capability.
func archRange(as []string) string {
	if len(as) == 0 {
		return ""
	}
	lo, hi := slices.MinFunc(as, compat.CompareArchs), slices.MaxFunc(as, compat.CompareArchs)
	return strings.TrimPrefix(lo, "sm_") + ".." + strings.TrimPrefix(hi, "sm_")
}

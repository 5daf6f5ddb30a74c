package cmd

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"imagectl/internal/discover"
)

func newDiffCmd() *cobra.Command {
	var (
		out outputFlag
		tf  trustFlags
	)
	cmd := &cobra.Command{
		Use:   "diff OLD NEW",
		Short: "What changed between two releases: packages, vulnerabilities, size, verification",
		Long: `Diff compares two releases from what their signed attestations say: packages
added, removed and changed (the signed SPDX SBOMs), vulnerabilities fixed and
new (the newest signed scans, VEX applied: a suppressed finding counts as
absent), the size and layer delta (what a node holding OLD pulls), and the
verification results side by side (GPU, driver, checks).

OLD and NEW are repository:tag or repository@sha256:...; NEW may be a bare
tag or digest of OLD's repository (imagectl diff REPO:demo-2026.11
demo-2026.12). Both must be signed, with a lock attestation, by the
platform's signing key: an unsigned input is refused (exit 5). For an image
index, one platform's image is compared (linux/amd64 first). The keys are
--key/--verifier-key, else cosign.pub and verifier.pub in keys/,
$IMAGECTL_KEYS_DIR or ~/.config/imagectl/keys.`,
		Example: `  imagectl diff registry.example/ml/demo:demo-2026.11 demo-2026.12
  imagectl diff registry.example/ml/demo@sha256:1111... registry.example/ml/demo:demo -o json`,
		Args: usageArgs(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := out.json()
			if err != nil {
				return err
			}
			opts, err := tf.discoverOptions(cmd)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			old, err := discover.ResolveRef(ctx, args[0], nil, opts...)
			if err != nil {
				return err
			}
			repo := old.Context()
			new, err := discover.ResolveRef(ctx, args[1], &repo, opts...)
			if err != nil {
				return err
			}
			d, err := discover.Compare(ctx, old, new, opts...)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), d)
			}
			return writeDiff(cmd.OutOrStdout(), d)
		},
	}
	addOutputFlag(cmd, &out)
	tf.add(cmd)
	return cmd
}

func writeDiff(w io.Writer, d *discover.Diff) error {
	fmt.Fprintf(w, "old %s\nnew %s\n", d.Old.Ref, d.New.Ref)
	if d.Old.Platform != "" {
		fmt.Fprintf(w, "platform %s\n", d.Old.Platform)
	}
	fmt.Fprintln(w, "\nPACKAGES")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "CHANGE\tTYPE\tNAME\tOLD\tNEW\n")
	for _, c := range d.Changed {
		fmt.Fprintf(tw, "changed\t%s\t%s\t%s\t%s\n", c.Type, c.Name, c.Old, c.New)
	}
	for _, p := range d.Added {
		fmt.Fprintf(tw, "added\t%s\t%s\t-\t%s\n", p.Type, p.Name, p.Version)
	}
	for _, p := range d.Removed {
		fmt.Fprintf(tw, "removed\t%s\t%s\t%s\t-\n", p.Type, p.Name, p.Version)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nVULNERABILITIES (signed scans, VEX applied)")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "STATUS\tID\tPACKAGE\tINSTALLED\tSEVERITY\n")
	for _, f := range d.Fixed {
		fmt.Fprintf(tw, "fixed\t%s\t%s\t%s\t%s\n", f.ID, f.Package, f.Installed, f.Severity)
	}
	for _, f := range d.Introduced {
		fmt.Fprintf(tw, "new\t%s\t%s\t%s\t%s\n", f.ID, f.Package, f.Installed, f.Severity)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nSIDE BY SIDE")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "\tOLD\tNEW\n")
	row := func(k string, f func(s discover.Side) string) { fmt.Fprintf(tw, "%s\t%s\t%s\n", k, f(d.Old), f(d.New)) }
	lk := func(f func(l discover.Side) string) func(discover.Side) string {
		return func(s discover.Side) string {
			if s.Lock == nil {
				return "-"
			}
			return dash(f(s))
		}
	}
	row("digest", func(s discover.Side) string { return s.Digest })
	row("torch", lk(func(s discover.Side) string { return s.Lock.Torch }))
	row("cuda", lk(func(s discover.Side) string { return s.Lock.CUDA }))
	row("python", lk(func(s discover.Side) string { return s.Lock.Python }))
	row("driver floor", lk(func(s discover.Side) string { return s.Lock.DriverFloor }))
	row("packages", func(s discover.Side) string { return fmt.Sprint(s.Packages) })
	row("size", func(s discover.Side) string { return discover.Bytes(s.Size) })
	row("layers", func(s discover.Side) string { return fmt.Sprint(s.Layers) })
	row("vulnerabilities", func(s discover.Side) string {
		if s.Scan == nil {
			return "no signed scan"
		}
		return fmt.Sprintf("%d active, %d suppressed (scan %s)", s.Scan.Findings, s.Scan.Suppressed, s.Scan.Finished)
	})
	row("verification", func(s discover.Side) string {
		v := s.Verification
		if v == nil {
			return "none signed"
		}
		st := "FAILED"
		if v.Passed {
			st = "passed"
		}
		return strings.TrimSpace(fmt.Sprintf("%s %s %s driver %s", st, v.Runtime, v.GPU, dash(v.Driver)))
	})
	for _, c := range []string{"allreduce", "compile-cold", "compile-warm"} {
		row(c, func(s discover.Side) string {
			if s.Verification == nil {
				return "-"
			}
			if ch := s.Verification.Check(c); ch != nil {
				return strings.TrimSpace(string(ch.Status) + " " + ch.Value)
			}
			return "-"
		})
	}
	tw.Flush()
	_, err := fmt.Fprintf(w, "\nsize %+d bytes; %d layer(s) added (%s to pull), %d removed\n", d.SizeDelta, d.LayersAdded, discover.Bytes(d.AddedBytes), d.LayersRemoved)
	return err
}

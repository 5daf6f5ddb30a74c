package cmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"imagectl/internal/exitcode"
	"imagectl/internal/monitoring"
)

func newMonitoringCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "monitoring",
		Short: "Prometheus rules, a PrometheusRule and a Grafana dashboard for the GPU fleet and imagectl's releases",
		Long: `Monitoring renders what a Prometheus and Grafana stack needs to watch the GPUs the
images run on (NVIDIA dcgm-exporter's metrics) and imagectl's own releases (the
metrics imagectl release and imagectl scan releases write with --metrics-file or
--pushgateway). docs/monitoring.md wires them and says what each alert means.`,
		Example: `  imagectl monitoring render --out /tmp/imagectl-monitoring`,
	}
	cmd.AddCommand(newMonitoringRenderCmd())
	return cmd
}

func newMonitoringRenderCmd() *cobra.Command {
	var (
		dir       string
		namespace string
	)
	th := monitoring.Defaults()
	cmd := &cobra.Command{
		Use:   "render --out DIR",
		Short: "Write the alerting rules, the PrometheusRule manifest and the Grafana dashboard",
		Long: `Render writes into --out (created when missing), each atomically:

  ` + monitoring.RulesFileName + `           Prometheus rule file (rule_files:, promtool check rules)
  ` + monitoring.PrometheusRuleFileName + `  the same groups as a Prometheus Operator PrometheusRule
  ` + monitoring.DashboardFileName + `       Grafana dashboard (Dashboards > New > Import)

The rules alert on NVIDIA dcgm-exporter's metrics (a GPU hot or critical, allocated
but idle, framebuffer nearly full, an XID error) and on the metrics imagectl release
and imagectl scan releases write with --metrics-file or --pushgateway (a stale or
failed release, a failed or missing daily re-scan, a new fixable critical). Each
threshold is a flag; docs/monitoring.md says what each alert means and what to do.
The paths written are printed on stdout.`,
		Example: `  imagectl monitoring render --out /tmp/imagectl-monitoring
  imagectl monitoring render --out deploy/monitoring --namespace monitoring --gpu-hot-celsius 80 --release-stale-age 840h
  promtool check rules /tmp/imagectl-monitoring/` + monitoring.RulesFileName,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			if dir == "" {
				return exitcode.Wrap(exitcode.Usage, fmt.Errorf("--out is required"))
			}
			if err := th.Validate(); err != nil {
				return exitcode.Wrap(exitcode.Usage, err)
			}
			paths, err := monitoring.Render(dir, th, namespace)
			if err != nil {
				return err
			}
			for _, p := range paths {
				fmt.Fprintln(cmd.OutOrStdout(), p)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&dir, "out", "", "directory to write the files into")
	fl.StringVar(&namespace, "namespace", "", "metadata.namespace of the PrometheusRule (none: kubectl's current namespace)")
	for _, p := range th.Params() {
		if p.Duration != nil {
			fl.DurationVar(p.Duration, p.Name, *p.Duration, p.Help)
		} else {
			fl.Float64Var(p.Number, p.Name, *p.Number, p.Help)
		}
	}
	return cmd
}

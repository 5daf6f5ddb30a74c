package monitoring

import (
	"encoding/json"
	"fmt"
)

// DashboardUID is the Grafana dashboard's uid: importing it again replaces
// it.
const DashboardUID = "imagectl-fleet"

// DashboardSchemaVersion is the Grafana dashboard schema version the JSON
// is written for.
const DashboardSchemaVersion = 39

// Dashboard is the subset of Grafana's dashboard JSON model that imagectl
// writes (and that TestDashboardSchema reads back strictly).
type Dashboard struct {
	UID           string      `json:"uid"`
	Title         string      `json:"title"`
	Tags          []string    `json:"tags"`
	Timezone      string      `json:"timezone"`
	SchemaVersion int         `json:"schemaVersion"`
	Version       int         `json:"version"`
	Editable      bool        `json:"editable"`
	Refresh       string      `json:"refresh"`
	Time          TimeRange   `json:"time"`
	Templating    Templating  `json:"templating"`
	Annotations   Annotations `json:"annotations"`
	Panels        []Panel     `json:"panels"`
}

// TimeRange is the dashboard's default time range.
type TimeRange struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Templating holds the dashboard's variables.
type Templating struct {
	List []Variable `json:"list"`
}

// Variable is a dashboard variable: the Prometheus data source.
type Variable struct {
	Name  string `json:"name"`
	Label string `json:"label"`
	Type  string `json:"type"`
	Query string `json:"query"`
}

// Annotations holds the dashboard's annotation queries (none).
type Annotations struct {
	List []any `json:"list"`
}

// Panel is one panel: a row, or a visualization with Prometheus targets.
type Panel struct {
	ID          int          `json:"id"`
	Type        string       `json:"type"`
	Title       string       `json:"title"`
	Description string       `json:"description,omitempty"`
	GridPos     GridPos      `json:"gridPos"`
	Datasource  *Datasource  `json:"datasource,omitempty"`
	Targets     []Target     `json:"targets,omitempty"`
	FieldConfig *FieldConfig `json:"fieldConfig,omitempty"`
}

// GridPos places a panel on Grafana's 24-column grid.
type GridPos struct {
	H int `json:"h"`
	W int `json:"w"`
	X int `json:"x"`
	Y int `json:"y"`
}

// Datasource names the data source: the ${datasource} variable.
type Datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// Target is one PromQL query of a panel.
type Target struct {
	RefID        string      `json:"refId"`
	Expr         string      `json:"expr"`
	LegendFormat string      `json:"legendFormat,omitempty"`
	Instant      bool        `json:"instant,omitempty"`
	Datasource   *Datasource `json:"datasource,omitempty"`
}

// FieldConfig sets a panel's unit and thresholds.
type FieldConfig struct {
	Defaults FieldDefaults `json:"defaults"`
	// Overrides is always empty; Grafana wants the key.
	Overrides []any `json:"overrides"`
}

// FieldDefaults is a panel's unit and thresholds.
type FieldDefaults struct {
	Unit       string           `json:"unit,omitempty"`
	Thresholds *ColorThresholds `json:"thresholds,omitempty"`
}

// ColorThresholds is a panel's color steps.
type ColorThresholds struct {
	Mode  string `json:"mode"`
	Steps []Step `json:"steps"`
}

// Step is one color step: from Value up (nil: from minus infinity).
type Step struct {
	Color string   `json:"color"`
	Value *float64 `json:"value"`
}

// PanelTypes are the panel types the dashboard uses: Grafana's built-in
// row, time series, stat and table.
var PanelTypes = map[string]bool{"row": true, "timeseries": true, "stat": true, "table": true}

var ds = &Datasource{Type: "prometheus", UID: "${datasource}"}

func steps(warn, crit float64) *FieldConfig {
	return &FieldConfig{Defaults: FieldDefaults{Thresholds: &ColorThresholds{Mode: "absolute", Steps: []Step{
		{Color: "green"}, {Color: "orange", Value: &warn}, {Color: "red", Value: &crit},
	}}}, Overrides: []any{}}
}

func unit(u string, fc *FieldConfig) *FieldConfig {
	if fc == nil {
		fc = &FieldConfig{Overrides: []any{}}
	}
	fc.Defaults.Unit = u
	return fc
}

// NewDashboard returns the dashboard for t: a row of GPU panels over
// dcgm-exporter's metrics (thresholds drawn at t's), a row of imagectl's
// release and verification panels, and a row of the daily re-scan's.
func NewDashboard(t Thresholds) Dashboard {
	gpuLegend := "{{Hostname}} GPU {{gpu}}"
	type p struct {
		typ, title, desc string
		w, h             int
		targets          []Target
		fc               *FieldConfig
	}
	q := func(expr, legend string) Target { return Target{Expr: expr, LegendFormat: legend} }
	qi := func(expr, legend string) Target { return Target{Expr: expr, LegendFormat: legend, Instant: true} }
	rows := []struct {
		title  string
		panels []p
	}{
		{"GPUs (dcgm-exporter)", []p{
			{"timeseries", "GPU temperature", "DCGM_FI_DEV_GPU_TEMP; orange and red at the GPUHot and GPUTemperatureCritical thresholds.", 12, 8,
				[]Target{q(DCGMGPUTemp, gpuLegend)}, unit("celsius", steps(t.GPUHotCelsius, t.GPUCriticalCelsius))},
			{"timeseries", "GPU utilization", "DCGM_FI_DEV_GPU_UTIL.", 12, 8,
				[]Target{q(DCGMGPUUtil, gpuLegend)}, unit("percent", nil)},
			{"timeseries", "Framebuffer used", "DCGM_FI_DEV_FB_USED / (USED + FREE); red at the GPUFramebufferNearlyFull ratio.", 12, 8,
				[]Target{q(fmt.Sprintf("%s / (%s + %s)", DCGMFBUsed, DCGMFBUsed, DCGMFBFree), gpuLegend)}, unit("percentunit", steps(t.FramebufferFullRatio, t.FramebufferFullRatio))},
			{"timeseries", "Power draw", "DCGM_FI_DEV_POWER_USAGE.", 12, 8,
				[]Target{q(DCGMPowerUsage, gpuLegend)}, unit("watt", nil)},
			{"stat", "GPUs allocated but idle", "GPUs below the idle utilization with memory in use (GPUAllocatedIdle before its for: duration).", 8, 6,
				[]Target{qi(fmt.Sprintf("count((%s < %s and %s > %s)) or vector(0)", DCGMGPUUtil, num(t.GPUIdlePercent), DCGMFBUsed, num(t.GPUIdleMemoryMiB)), "idle")}, nil},
			{"table", "Last XID error per GPU", "DCGM_FI_DEV_XID_ERRORS above 0: the last XID code.", 16, 6,
				[]Target{qi(fmt.Sprintf("%s > 0", DCGMXIDErrors), gpuLegend)}, nil},
		}},
		{"Releases (imagectl release)", []p{
			{"stat", "Age of the newest release", "time() - imagectl_release_timestamp_seconds per image; red past ImagectlReleaseStale's age.", 12, 6,
				[]Target{qi(fmt.Sprintf("time() - %s", ReleaseTimestamp), "{{image}}")}, unit("s", steps(t.ReleaseStaleAge.Seconds()*0.9, t.ReleaseStaleAge.Seconds()))},
			{"stat", "Age of the newest verification", "time() - imagectl_verify_timestamp_seconds per image.", 12, 6,
				[]Target{qi(fmt.Sprintf("time() - %s", VerifyTimestamp), "{{image}}")}, unit("s", nil)},
			{"table", "Last release run", "imagectl_release_success: 1 every stage passed, 0 failed at failed_stage.", 12, 8,
				[]Target{qi(ReleaseSuccess, "{{image}} {{failed_stage}}")}, nil},
			{"timeseries", "Stage durations", "imagectl_release_stage_duration_seconds.", 12, 8,
				[]Target{q(ReleaseStageDuration, "{{image}} {{stage}}")}, unit("s", nil)},
			{"timeseries", "Verified all-reduce bus bandwidth", "imagectl_verify_busbw_bytes_per_second.", 8, 8,
				[]Target{q(VerifyBusBandwidth, "{{image}}")}, unit("Bps", nil)},
			{"timeseries", "torch.compile first call", "imagectl_verify_compile_seconds, cold and warm cache.", 8, 8,
				[]Target{q(VerifyCompileSeconds, "{{image}} {{cache}}")}, unit("s", nil)},
			{"timeseries", "Image size and delta", "imagectl_image_size_bytes and imagectl_image_delta_bytes.", 8, 8,
				[]Target{q(ImageSize, "{{image}} size"), q(ImageDelta, "{{image}} delta")}, unit("bytes", nil)},
			{"table", "Failed verification checks", "imagectl_verify_check == 0.", 24, 6,
				[]Target{qi(fmt.Sprintf("%s == 0", VerifyCheck), "{{image}} {{check}}")}, nil},
		}},
		{"Vulnerabilities (imagectl scan releases)", []p{
			{"table", "Findings by severity", "imagectl_scan_findings: the newest signed scan of each promoted digest.", 12, 8,
				[]Target{qi(fmt.Sprintf("sum by (image, month, severity) (%s)", ScanFindings), "{{image}} {{month}} {{severity}}")}, nil},
			{"table", "New since the previous scan", "imagectl_scan_new_findings: what the daily re-scan found new.", 12, 8,
				[]Target{qi(fmt.Sprintf("sum by (image, month, severity, fixable) (%s) > 0", ScanNewFindings), "{{image}} {{month}} {{severity}}")}, nil},
			{"stat", "New fixable critical", "ImagectlNewFixableCritical's count.", 8, 6,
				[]Target{qi(fmt.Sprintf(`sum(%s{severity="critical", fixable="true"}) or vector(0)`, ScanNewFindings), "critical")}, steps(1, 1)},
			{"stat", "Last re-scan", "imagectl_rescan_success (1 ok, 0 failed).", 8, 6,
				[]Target{qi(RescanSuccess, "success")}, nil},
			{"stat", "Age of the last re-scan", "time() - imagectl_rescan_timestamp_seconds.", 8, 6,
				[]Target{qi(fmt.Sprintf("time() - %s", RescanTimestamp), "age")}, unit("s", steps(t.RescanStaleAge.Seconds()*0.75, t.RescanStaleAge.Seconds()))},
		}},
	}
	d := Dashboard{
		UID: DashboardUID, Title: "imagectl: GPU fleet and releases", Tags: []string{"imagectl", "gpu", "dcgm"},
		Timezone: "utc", SchemaVersion: DashboardSchemaVersion, Version: 1, Editable: true, Refresh: "1m",
		Time:        TimeRange{From: "now-24h", To: "now"},
		Templating:  Templating{List: []Variable{{Name: "datasource", Label: "Prometheus", Type: "datasource", Query: "prometheus"}}},
		Annotations: Annotations{List: []any{}},
	}
	id, y := 1, 0
	for _, r := range rows {
		d.Panels = append(d.Panels, Panel{ID: id, Type: "row", Title: r.title, GridPos: GridPos{H: 1, W: 24, X: 0, Y: y}})
		id, y = id+1, y+1
		x, rowH := 0, 0
		for _, pp := range r.panels {
			if x+pp.w > 24 {
				x, y, rowH = 0, y+rowH, 0
			}
			targets := make([]Target, len(pp.targets))
			for i, tg := range pp.targets {
				tg.RefID, tg.Datasource = string(rune('A'+i)), ds
				targets[i] = tg
			}
			d.Panels = append(d.Panels, Panel{ID: id, Type: pp.typ, Title: pp.title, Description: pp.desc,
				GridPos: GridPos{H: pp.h, W: pp.w, X: x, Y: y}, Datasource: ds, Targets: targets, FieldConfig: pp.fc})
			id, x = id+1, x+pp.w
			rowH = max(rowH, pp.h)
		}
		y += rowH
	}
	return d
}

// DashboardJSON is NewDashboard(t) as indented JSON, ready for Grafana's
// import.
func DashboardJSON(t Thresholds) ([]byte, error) {
	b, err := json.MarshalIndent(NewDashboard(t), "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding the dashboard: %w", err)
	}
	return append(b, '\n'), nil
}

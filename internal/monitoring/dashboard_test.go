package monitoring

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// grafanaDashboard is what Grafana's import needs of a dashboard, decoded
// strictly: a field imagectl writes that is not here is an error too.
type grafanaDashboard struct {
	UID           string   `json:"uid"`
	Title         string   `json:"title"`
	Tags          []string `json:"tags"`
	Timezone      string   `json:"timezone"`
	SchemaVersion int      `json:"schemaVersion"`
	Version       int      `json:"version"`
	Editable      bool     `json:"editable"`
	Refresh       string   `json:"refresh"`
	Time          struct {
		From string `json:"from"`
		To   string `json:"to"`
	} `json:"time"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Label string `json:"label"`
			Type  string `json:"type"`
			Query string `json:"query"`
		} `json:"list"`
	} `json:"templating"`
	Annotations struct {
		List []json.RawMessage `json:"list"`
	} `json:"annotations"`
	Panels []struct {
		ID          int    `json:"id"`
		Type        string `json:"type"`
		Title       string `json:"title"`
		Description string `json:"description"`
		GridPos     struct {
			H, W, X, Y int
		} `json:"gridPos"`
		Datasource *struct {
			Type string `json:"type"`
			UID  string `json:"uid"`
		} `json:"datasource"`
		Targets []struct {
			RefID        string `json:"refId"`
			Expr         string `json:"expr"`
			LegendFormat string `json:"legendFormat"`
			Instant      bool   `json:"instant"`
			Datasource   *struct {
				Type string `json:"type"`
				UID  string `json:"uid"`
			} `json:"datasource"`
		} `json:"targets"`
		FieldConfig json.RawMessage `json:"fieldConfig"`
	} `json:"panels"`
}

// grafanaPanelTypes are Grafana's built-in panel types a dashboard may
// use without a plugin.
var grafanaPanelTypes = []string{"row", "timeseries", "stat", "table", "gauge", "bargauge", "text", "heatmap"}

func renderedDashboard(t *testing.T) grafanaDashboard {
	t.Helper()
	dir := t.TempDir()
	if _, err := Render(dir, Defaults(), ""); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, DashboardFileName))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var d grafanaDashboard
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("decoding the dashboard strictly: %v", err)
	}
	return d
}

// TestDashboardSchema checks the rendered dashboard against what Grafana's
// import requires: a uid, a schema version Grafana 10+ reads, a
// datasource variable every target names, known panel types, unique
// panel ids and refIds, panels inside the 24-column grid, a query on every
// non-row panel.
func TestDashboardSchema(t *testing.T) {
	d := renderedDashboard(t)
	if d.UID == "" || d.Title == "" {
		t.Errorf("uid %q, title %q: want both", d.UID, d.Title)
	}
	if d.SchemaVersion < 36 {
		t.Errorf("schemaVersion %d, want >= 36 (Grafana 9+ datasource refs by uid)", d.SchemaVersion)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars["${"+v.Name+"}"] = v.Type + "/" + v.Query
	}
	if vars["${datasource}"] != "datasource/prometheus" {
		t.Errorf("templating %v: want a datasource variable of type prometheus", d.Templating.List)
	}
	ids := map[int]bool{}
	var queries int
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		if !slices.Contains(grafanaPanelTypes, p.Type) {
			t.Errorf("panel %q: type %q is not a built-in Grafana panel type %v", p.Title, p.Type, grafanaPanelTypes)
		}
		if !PanelTypes[p.Type] {
			t.Errorf("panel %q: type %q not in PanelTypes", p.Title, p.Type)
		}
		if g := p.GridPos; g.W < 1 || g.H < 1 || g.X < 0 || g.X+g.W > 24 {
			t.Errorf("panel %q: gridPos %+v outside the 24-column grid", p.Title, g)
		}
		if p.Type == "row" {
			if len(p.Targets) > 0 {
				t.Errorf("row %q has targets", p.Title)
			}
			continue
		}
		if len(p.Targets) == 0 || p.Datasource == nil || p.Datasource.Type != "prometheus" || vars[p.Datasource.UID] == "" {
			t.Errorf("panel %q: targets %d, datasource %+v: want queries on the ${datasource} variable", p.Title, len(p.Targets), p.Datasource)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			queries++
			if tg.Expr == "" || tg.RefID == "" || refs[tg.RefID] {
				t.Errorf("panel %q: target %+v: want an expr and a unique refId", p.Title, tg)
			}
			refs[tg.RefID] = true
			if tg.Datasource == nil || vars[tg.Datasource.UID] == "" {
				t.Errorf("panel %q: target %s names no dashboard datasource", p.Title, tg.RefID)
			}
		}
	}
	if queries == 0 {
		t.Fatal("the dashboard has no queries")
	}
}

// known is every metric name the rules and the dashboard may name: the
// documented dcgm-exporter set and imagectl's own constants (which
// internal/release's and internal/scan's writers are tested to emit).
func known() map[string]bool {
	m := map[string]bool{}
	for _, n := range append(DCGMMetrics(), ImagectlMetrics()...) {
		m[n] = true
	}
	return m
}

// TestDashboardNamesOnlyKnownMetrics: every metric name in every panel's
// query is a dcgm-exporter metric or one imagectl writes; and every GPU
// metric the rules alert on has a panel.
func TestDashboardNamesOnlyKnownMetrics(t *testing.T) {
	d := renderedDashboard(t)
	k := known()
	used := map[string]bool{}
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			names, err := metricNames(tg.Expr)
			if err != nil {
				t.Errorf("panel %q: %v", p.Title, err)
				continue
			}
			if len(names) == 0 {
				t.Errorf("panel %q: %q selects no metric", p.Title, tg.Expr)
			}
			for _, n := range names {
				if !k[n] {
					t.Errorf("panel %q: %q names %s, which neither dcgm-exporter nor imagectl exports", p.Title, tg.Expr, n)
				}
				used[n] = true
			}
		}
	}
	for _, n := range append(DCGMMetrics(), ReleaseTimestamp, ScanNewFindings, RescanSuccess, RescanTimestamp, VerifyBusBandwidth, VerifyCompileSeconds) {
		if !used[n] {
			t.Errorf("no panel shows %s", n)
		}
	}
}

// TestRulesNameOnlyKnownMetrics is the same check over the alerting rules.
func TestRulesNameOnlyKnownMetrics(t *testing.T) {
	k := known()
	for _, g := range Rules(Defaults()) {
		for _, r := range g.Rules {
			names, err := metricNames(r.Expr)
			if err != nil {
				t.Errorf("%s: %v", r.Alert, err)
			}
			if len(names) == 0 {
				t.Errorf("%s: %q selects no metric", r.Alert, r.Expr)
			}
			for _, n := range names {
				if !k[n] {
					t.Errorf("%s: %q names %s, which neither dcgm-exporter nor imagectl exports", r.Alert, r.Expr, n)
				}
			}
		}
	}
}

func TestMetricNames(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`DCGM_FI_DEV_GPU_TEMP > 85`, []string{"DCGM_FI_DEV_GPU_TEMP"}},
		{`a / (a + b) > 0.95`, []string{"a", "a", "b"}},
		{`sum by (image, month) (x{severity="critical", fixable="true"}) > 0`, []string{"x"}},
		{`count((u < 5 and f > 1024)) or vector(0)`, []string{"u", "f"}},
		{`time() - ts > 3.024e+06`, []string{"ts"}},
		{`rate(c_total{a="}"}[5m]) offset 1h`, []string{"c_total"}},
		{`max(x) by (gpu) * on (gpu) group_left(pod) y`, []string{"x", "y"}},
	} {
		got, err := metricNames(tc.expr)
		if err != nil {
			t.Errorf("metricNames(%q): %v", tc.expr, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("metricNames(%q) (-want +got):\n%s", tc.expr, diff)
		}
	}
	if _, err := metricNames(`DCGM_FI_DEV_GPU_TEMPP(x)`); err == nil {
		t.Error("metricNames accepted a call of an unknown function")
	}
}

// Package report holds what a vulnerability scan found, cosign's vuln
// predicate that carries it, and the vulnerability policy that gates
// promotion on it. It needs no scanner: promote reads signed results
// without linking grype.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Result is one scan of one image.
type Result struct {
	// Image is the scanned repo@sha256:... (empty for a bare SBOM).
	Image string `json:"image,omitempty"`
	// Product is the image's package URL (pkg:oci/...), read from the
	// SBOM; VEX statements name it.
	Product    string    `json:"product,omitempty"`
	Scanner    Scanner   `json:"scanner"`
	DB         DBInfo    `json:"db"`
	StartedOn  time.Time `json:"scanStartedOn"`
	FinishedOn time.Time `json:"scanFinishedOn"`
	// Packages is how many packages the SBOM listed.
	Packages int       `json:"packages"`
	Findings []Finding `json:"findings"`
}

// Scanner names the scanner.
type Scanner struct {
	URI     string `json:"uri"`
	Version string `json:"version"`
}

// DBInfo names the database a scan used.
type DBInfo struct {
	URI     string    `json:"uri"`
	Version string    `json:"version"`
	Built   time.Time `json:"built"`
	Digest  string    `json:"digest"`
	Schema  string    `json:"schema"`
}

// Finding is one vulnerability matched to one package.
type Finding struct {
	ID        string   `json:"id"`
	Aliases   []string `json:"aliases,omitempty"`
	Package   string   `json:"package"`
	Installed string   `json:"installed"`
	// FixedIn lists the versions that fix it; empty: no fix known.
	FixedIn  []string `json:"fixedIn,omitempty"`
	Severity string   `json:"severity"`
	// Type is the package type (deb, python).
	Type string `json:"type"`
	PURL string `json:"purl,omitempty"`
	// Source is the advisory namespace the record came from (e.g.
	// debian:distro:debian:12, github:language:python).
	Source string `json:"source"`
	// Suppressed is set when a VEX statement covers the finding.
	Suppressed *Suppression `json:"suppressed,omitempty"`
}

// Suppression is the VEX statement that covers a finding.
type Suppression struct {
	Document      string `json:"document"`
	Status        string `json:"status"`
	Justification string `json:"justification,omitempty"`
	Impact        string `json:"impact,omitempty"`
}

// Fixable reports whether a fixed version is known.
func (f Finding) Fixable() bool { return len(f.FixedIn) > 0 }

// Names are the finding's ID and its aliases.
func (f Finding) Names() []string { return append([]string{f.ID}, f.Aliases...) }

// Severities in order; SeverityRank gives their rank (unknown and
// negligible lowest).
var severities = []string{"unknown", "negligible", "low", "medium", "high", "critical"}

// SeverityRank is s's rank in unknown < negligible < low < medium < high
// < critical; -1 for anything else.
func SeverityRank(s string) int {
	for i, x := range severities {
		if strings.EqualFold(s, x) {
			return i
		}
	}
	return -1
}

// Active returns the findings no VEX statement suppresses.
func (r *Result) Active() []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if f.Suppressed == nil {
			out = append(out, f)
		}
	}
	return out
}

// WriteTable writes r as a table: ID, package, installed, fixed-in,
// severity, source; suppressed findings say so in a last column.
func (r *Result) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tPACKAGE\tINSTALLED\tFIXED-IN\tSEVERITY\tSOURCE\tVEX")
	for _, f := range r.Findings {
		fixed := strings.Join(f.FixedIn, ",")
		if fixed == "" {
			fixed = "(none)"
		}
		vex := ""
		if s := f.Suppressed; s != nil {
			vex = "suppressed: " + s.Status
			if s.Justification != "" {
				vex += " (" + s.Justification + ")"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", f.ID, f.Package, f.Installed, fixed, f.Severity, f.Source, vex)
	}
	return tw.Flush()
}

// JSON is r's JSON encoding.
func (r *Result) JSON() ([]byte, error) { return json.MarshalIndent(r, "", "  ") }

package main

import "runtime/debug"

// buildVersion is set at link time (-ldflags "-X main.buildVersion=v1.2.3");
// without it the module version and VCS revision recorded in the binary are
// used.
var buildVersion string

func version() string {
	if buildVersion != "" {
		return buildVersion
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			v += " " + s.Value
		}
	}
	return v + " (" + bi.GoVersion + ")"
}

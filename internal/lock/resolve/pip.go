package resolve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"sort"
	"strings"

	"imagectl/internal/auth"
	"imagectl/internal/lock"
	"imagectl/internal/logs"
	"imagectl/internal/pep"
)

// PipError reports that pip could not resolve the requirements; Output is
// pip's own explanation (for a conflict: which packages asked for what).
type PipError struct {
	Output string
}

func (e *PipError) Error() string {
	return "pip could not resolve the requirements:\n" + strings.TrimSpace(e.Output)
}

// pipRequest is one pip resolution.
type pipRequest struct {
	Requirements []string // spec entries, plus torch when the spec has none
	Constraints  []string // "name==version" lines
	// Index is the one index pip sees: the lock's routing proxy, which
	// serves each project from its one upstream index.
	Index string
	// Python is the spec's MAJOR.MINOR; the script runs python$Python.
	Python string
	// Resolver is the locked pip wheel; ResolverURL is where the step
	// fetches it (the proxy), checked against Resolver.SHA256.
	Resolver    lock.Wheel
	ResolverURL string
}

// pipScript finds the spec's interpreter (python3.X, from the base or the
// locked debs), makes an empty venv with it (no pip inside) and runs the
// locked pip wheel from the wheel itself (python pip.whl/pip) in it, so
// neither the base's pip nor its pip configuration (--isolated) takes
// part. pip writes its report; its exit status and output are files, so a
// failed resolution is reported with pip's own words.
const pipScript = `set -u
: >/out/pip.log
if ! py=$(command -v "python$PYTHON"); then
  echo "python$PYTHON is not on PATH in the base with the locked debs" >/out/pip.log
  echo 127 >/out/pip.rc
  exit 0
fi
printf '%s\n' "$py" >/out/python.path
if ! "$py" -m venv --without-pip /tmp/imagectl-venv >/out/venv.log 2>&1; then
  { echo "$py -m venv --without-pip failed:"; cat /out/venv.log; } >/out/pip.log
  echo 1 >/out/pip.rc
  exit 0
fi
/tmp/imagectl-venv/bin/python "/pip/$PIPWHEEL/pip" --isolated install --dry-run --ignore-installed --only-binary=:all: --no-cache-dir \
  --progress-bar off --index-url "$INDEX" --report /out/report.json -r /in/requirements.txt ${CONSTRAINTS:-} >>/out/pip.log 2>&1
echo $? >/out/pip.rc
`

// fetched matches the wheels pip's log says it fetched (or fetched the
// metadata of), newest first for each project.
var fetched = regexp.MustCompile(`(?:Downloading|from) (\S+?\.whl)(?:\.metadata)?(?:\s|$)`)

// held is a package pip resolved below the first (newest) version it tried.
type held struct{ Name, Locked, Seen string }

func heldBack(log []byte, wheels []lock.Wheel) []held {
	first := map[string]string{}
	for _, m := range fetched.FindAllSubmatch(log, -1) {
		f := path.Base(string(m[1]))
		if u, err := url.PathUnescape(f); err == nil {
			f = u
		}
		w, ok := pep.ParseWheel(f)
		if !ok {
			continue
		}
		if first[w.Name] == "" {
			first[w.Name] = w.Version
		}
	}
	var out []held
	for _, w := range wheels {
		if v := first[w.Name]; v != "" && v != w.Version {
			out = append(out, held{Name: w.Name, Locked: w.Version, Seen: v})
		}
	}
	return out
}

// pipReq is the start of a PEP 508 requirement: a project name.
var pipReq = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*`)

func (p pipRequest) files() (map[string][]byte, string, error) {
	var b strings.Builder
	for _, r := range p.Requirements {
		if !pipReq.MatchString(r) || strings.ContainsAny(r, "\n\r") {
			return nil, "", fmt.Errorf("pip requirement %q is not a PEP 508 requirement (name[extras] specifier)", r)
		}
		// The name in normal form, as the index proxy serves every name.
		n := pipReq.FindString(r)
		b.WriteString(pep.Normalize(n) + r[len(n):] + "\n")
	}
	if !pythonMinor.MatchString(p.Python) {
		return nil, "", fmt.Errorf("python %q is not MAJOR.MINOR (e.g. 3.11)", p.Python)
	}
	if strings.ContainsAny(p.Index+p.Resolver.Filename, " \n\r\t'\"$`\\") || strings.Contains(p.Resolver.Filename, "/") {
		return nil, "", fmt.Errorf("index %q or resolver wheel %q has characters the resolution step cannot take", p.Index, p.Resolver.Filename)
	}
	files := map[string][]byte{"requirements.txt": []byte(b.String())}
	script := "PYTHON=" + p.Python + "\nINDEX='" + p.Index + "'\nPIPWHEEL='" + p.Resolver.Filename + "'\n"
	if len(p.Constraints) > 0 {
		files["constraints.txt"] = []byte(strings.Join(p.Constraints, "\n") + "\n")
		script += "CONSTRAINTS='-c /in/constraints.txt'\n"
	}
	return files, script + pipScript, nil
}

// report is the part of pip's installation report (format version 1) the
// lock reads.
type report struct {
	Version     string       `json:"version"`
	PipVersion  string       `json:"pip_version"`
	Install     []reportItem `json:"install"`
	Environment struct {
		PythonVersion      string `json:"python_version"`
		PythonFullVersion  string `json:"python_full_version"`
		PlatformMachine    string `json:"platform_machine"`
		ImplementationName string `json:"implementation_name"`
	} `json:"environment"`
}

type reportItem struct {
	DownloadInfo struct {
		URL         string `json:"url"`
		ArchiveInfo *struct {
			Hash   string            `json:"hash"`
			Hashes map[string]string `json:"hashes"`
		} `json:"archive_info"`
	} `json:"download_info"`
	Requested bool `json:"requested"`
	Metadata  struct {
		Name         string   `json:"name"`
		Version      string   `json:"version"`
		RequiresDist []string `json:"requires_dist"`
	} `json:"metadata"`
}

// pipResult is a parsed report.
type pipResult struct {
	Wheels []lock.Wheel
	Python string // the interpreter's full version, e.g. 3.11.2
	Path   string // the interpreter the step ran, e.g. /usr/bin/python3.11
	items  map[string]reportItem
}

func runPip(ctx context.Context, r Runner, image string, debs []lock.Deb, req pipRequest, netrc bool) (*pipResult, error) {
	files, script, err := req.files()
	if err != nil {
		return nil, err
	}
	resolver := req.Resolver
	resolver.URL = req.ResolverURL
	out, err := r.Run(ctx, Job{Name: "pip resolve", Image: image, Debs: debs, Files: files, Script: script, Netrc: netrc, Resolver: &resolver})
	if err != nil {
		return nil, err
	}
	if rc := strings.TrimSpace(string(out["pip.rc"])); rc != "0" {
		return nil, &PipError{Output: auth.Redact(string(out["pip.log"]))}
	}
	res, err := parseReport(out["report.json"])
	if err != nil {
		return nil, err
	}
	res.Path = strings.TrimSpace(string(out["python.path"]))
	for _, h := range heldBack(out["pip.log"], res.Wheels) {
		logs.From(ctx).Warn("pip held a package below the newest version it saw: that version did not fit the other requirements (with --upgrade: the frozen core)",
			"package", h.Name, "locked", h.Locked, "newest_seen", h.Seen)
	}
	return res, nil
}

func parseReport(b []byte) (*pipResult, error) {
	var rep report
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("reading pip's report: %w", err)
	}
	if rep.Version != "0" && rep.Version != "1" {
		return nil, fmt.Errorf("pip's report has format version %q; this imagectl reads 0 and 1", rep.Version)
	}
	res := &pipResult{Python: rep.Environment.PythonFullVersion, items: map[string]reportItem{}}
	if res.Python == "" {
		res.Python = rep.Environment.PythonVersion
	}
	for _, it := range rep.Install {
		name := pep.Normalize(it.Metadata.Name)
		if name == "" || it.Metadata.Version == "" {
			return nil, fmt.Errorf("pip's report has an entry without name or version (%s)", it.DownloadInfo.URL)
		}
		u, err := url.Parse(it.DownloadInfo.URL)
		if err != nil || u.Scheme == "" {
			return nil, fmt.Errorf("%s: download URL %q is not a URL", name, it.DownloadInfo.URL)
		}
		u.User, u.Fragment, u.RawFragment = nil, "", ""
		file := path.Base(u.Path)
		if f, err := url.PathUnescape(file); err == nil {
			file = f
		}
		if !strings.HasSuffix(file, ".whl") {
			return nil, fmt.Errorf("%s %s: %s is not a wheel; the lock takes wheels only", name, it.Metadata.Version, file)
		}
		sum := ""
		if ai := it.DownloadInfo.ArchiveInfo; ai != nil {
			sum = ai.Hashes["sha256"]
			if sum == "" {
				if v, ok := strings.CutPrefix(ai.Hash, "sha256="); ok {
					sum = v
				}
			}
		}
		if !pep.IsSHA256(sum) {
			return nil, fmt.Errorf("%s %s: the index gives no sha256 for %s; the lock needs one for every wheel", name, it.Metadata.Version, u.String())
		}
		if _, dup := res.items[name]; dup {
			return nil, fmt.Errorf("pip's report lists %s twice", name)
		}
		res.items[name] = it
		res.Wheels = append(res.Wheels, lock.Wheel{Name: name, Version: it.Metadata.Version, Filename: file, URL: u.String(), SHA256: strings.ToLower(sum)})
	}
	sort.Slice(res.Wheels, func(i, j int) bool { return res.Wheels[i].Name < res.Wheels[j].Name })
	return res, nil
}

// reqName is the normalized project name of a requirement string.
func reqName(req string) string {
	return pep.Normalize(pipReq.FindString(strings.TrimSpace(req)))
}

// pins returns the "==" versions that a Requires-Dist list pins for
// projects whose normalized names start with prefix, by project name.
func pins(requires []string, prefix string) map[string]string {
	out := map[string]string{}
	for _, r := range requires {
		spec, _, _ := strings.Cut(r, ";")
		name := reqName(spec)
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		rest := strings.TrimSpace(spec[len(pipReq.FindString(strings.TrimSpace(spec))):])
		rest = strings.Trim(rest, "() ")
		for _, c := range strings.Split(rest, ",") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(c), "=="); ok {
				out[name] = strings.TrimSpace(v)
			}
		}
	}
	return out
}

// requiredBy names the packages in res whose Requires-Dist mention name,
// with the requirement as written, and whether the user asked for them.
func (res *pipResult) requiredBy(name string) []string {
	var out []string
	for n, it := range res.items {
		for _, r := range it.Metadata.RequiresDist {
			spec, _, _ := strings.Cut(r, ";")
			if reqName(spec) == name {
				who := n + " " + it.Metadata.Version
				if it.Requested {
					who += " (requested)"
				}
				out = append(out, fmt.Sprintf("%s requires %s", who, strings.TrimSpace(spec)))
			}
		}
	}
	sort.Strings(out)
	return out
}

package runtime

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"
)

// FingerprintVersion is the version of the fingerprint's JSON layout.
const FingerprintVersion = 1

// Fingerprint describes the environment a container started in, so that two
// machines that behave differently can be compared field by field.
type Fingerprint struct {
	Version     int        `json:"version"`
	CollectedAt string     `json:"collected_at,omitempty"`
	Hostname    string     `json:"hostname,omitempty"`
	Image       ImageFacts `json:"image"`
	ImageDigest string     `json:"image_digest,omitempty"`
	Kernel      string     `json:"kernel,omitempty"`
	Arch        string     `json:"arch"`
	CPUs        int        `json:"cpus"`
	MemoryBytes int64      `json:"memory_bytes,omitempty"`
	Driver      Driver     `json:"driver"`
	DriverFloor string     `json:"driver_floor,omitempty"`
	Swappiness  int        `json:"swappiness"`
	Shm         ShmResult  `json:"shm"`
	Storage     FPStorage  `json:"storage"`
	Caches      []CacheDir `json:"caches,omitempty"`
	// User is who the command runs as, when the runtime block names one.
	User *FPUser `json:"user,omitempty"`
	// Services are the services the init supervises (and those it
	// refused), as they were when the command started.
	Services []ServiceState `json:"services,omitempty"`
}

// FPUser is the user part of a fingerprint.
type FPUser struct {
	Name string `json:"name"`
	UID  int    `json:"uid"`
	GID  int    `json:"gid"`
	Home string `json:"home"`
	// Switched says the init switched to the user; false when the
	// container started as a non-root user.
	Switched bool `json:"switched"`
}

// FPStorage is the storage part of a fingerprint.
type FPStorage struct {
	Path    string `json:"path,omitempty"`
	Ready   bool   `json:"ready"`
	FSType  string `json:"fstype,omitempty"`
	Source  string `json:"source,omitempty"`
	Options string `json:"options,omitempty"`
}

// collectFingerprint assembles a fingerprint from what the init found.
func collectFingerprint(cfg Config, env []string, st StorageState, shm ShmResult, drv Driver, swappiness int, caches []CacheDir) Fingerprint {
	fp := Fingerprint{
		Version:     FingerprintVersion,
		CollectedAt: time.Now().UTC().Format(time.RFC3339),
		Image:       cfg.Image,
		ImageDigest: getenvFrom(env, EnvImageDigest),
		Arch:        goruntime.GOARCH,
		CPUs:        goruntime.NumCPU(),
		MemoryBytes: memTotal(),
		Driver:      drv,
		DriverFloor: cfg.DriverFloor,
		Swappiness:  swappiness,
		Shm:         shm,
		Storage:     FPStorage{Path: st.Root, Ready: st.Ready},
		Caches:      caches,
	}
	fp.Shm.Advice = ""
	if fp.Driver.GPUs == nil {
		fp.Driver.GPUs = []GPU{}
	}
	fp.Hostname, _ = os.Hostname()
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		fp.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	if st.Mount != nil {
		fp.Storage.FSType, fp.Storage.Source, fp.Storage.Options = st.Mount.FSType, st.Mount.Source, st.Mount.Options
	}
	return fp
}

func getenvFrom(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v
		}
	}
	return ""
}

// memTotal is the machine's RAM (sysinfo(2); /proc/meminfo costs a
// tenth of a millisecond to generate).
func memTotal() int64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}

// writeFingerprint writes fp as JSON to path through a temp file and a
// rename, so a collector never reads half of one.
func writeFingerprint(path string, fp Fingerprint) error {
	// encoding/json, not a hand-written encoder: measured side by side
	// (docs/init.md, "Start-up"), the hand-written one saved 0.14-0.30 ms of
	// start-up, under the 1 ms that would have paid for keeping it.
	b, err := json.MarshalIndent(fp, "", "  ")
	if err != nil {
		return fmt.Errorf("writing fingerprint: %w", err)
	}
	dir := filepath.Dir(path)
	if err := makeDir(dir); err != nil {
		return fmt.Errorf("writing fingerprint: %w", err)
	}
	tmp := tempName(dir, filepath.Base(path))
	err = writeNewFile(tmp, append(b, '\n'), 0o644)
	if err == nil {
		if rerr := syscall.Rename(tmp, path); rerr != nil {
			err = &fs.PathError{Op: "rename", Path: tmp, Err: rerr}
		}
	}
	if err != nil {
		_ = syscall.Unlink(tmp)
		return fmt.Errorf("writing fingerprint %s: %w", path, err)
	}
	return nil
}

// ReadFingerprint reads a fingerprint file.
func ReadFingerprint(path string) (Fingerprint, error) {
	var fp Fingerprint
	b, err := os.ReadFile(path)
	if err != nil {
		return fp, fmt.Errorf("reading fingerprint: %w", err)
	}
	if err := json.Unmarshal(b, &fp); err != nil {
		return fp, fmt.Errorf("reading fingerprint %s: %w", path, err)
	}
	if fp.Version != FingerprintVersion {
		return fp, fmt.Errorf("reading fingerprint %s: version %d, this imagectl reads version %d", path, fp.Version, FingerprintVersion)
	}
	return fp, nil
}

// Difference is one field that differs between two fingerprints. A field
// missing on one side has an empty value there.
type Difference struct {
	Field string `json:"field"`
	A     string `json:"a"`
	B     string `json:"b"`
}

// DiffFingerprints lists the fields that differ between a and b, sorted by
// field name; list elements are named by index (driver.gpus[1].model). The
// collection time is ignored.
func DiffFingerprints(a, b Fingerprint) ([]Difference, error) {
	fa, err := flatten(a)
	if err != nil {
		return nil, err
	}
	fb, err := flatten(b)
	if err != nil {
		return nil, err
	}
	var out []Difference
	for k, va := range fa {
		if vb, ok := fb[k]; !ok || va != vb {
			out = append(out, Difference{Field: k, A: va, B: fb[k]})
		}
	}
	for k, vb := range fb {
		if _, ok := fa[k]; !ok {
			out = append(out, Difference{Field: k, B: vb})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Field < out[j].Field })
	return out, nil
}

func flatten(fp Fingerprint) (map[string]string, error) {
	fp.CollectedAt = ""
	b, err := json.Marshal(fp)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	out := map[string]string{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				p := k
				if prefix != "" {
					p = prefix + "." + k
				}
				walk(p, e)
			}
		case []any:
			out[prefix+".count"] = strconv.Itoa(len(x))
			for i, e := range x {
				walk(fmt.Sprintf("%s[%d]", prefix, i), e)
			}
		case nil:
		default:
			out[prefix] = fmt.Sprint(x)
		}
	}
	walk("", v)
	return out, nil
}

// WriteDiffText renders differences as an aligned table for people.
func WriteDiffText(w io.Writer, nameA, nameB string, diffs []Difference) error {
	if len(diffs) == 0 {
		_, err := fmt.Fprintf(w, "%s and %s describe the same environment\n", nameA, nameB)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "FIELD\t%s\t%s\n", nameA, nameB)
	show := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	for _, d := range diffs {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", d.Field, show(d.A), show(d.B))
	}
	return tw.Flush()
}

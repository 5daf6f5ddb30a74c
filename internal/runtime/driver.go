package runtime

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"imagectl/internal/exitcode"
	"imagectl/internal/version"
)

// Driver is what the kernel module says about the NVIDIA driver and GPUs.
type Driver struct {
	// Version is the kernel module's version, e.g. 580.159.04; empty when
	// no NVIDIA driver is loaded (or visible to the container).
	Version string `json:"version,omitempty"`
	// GPUs are the GPUs the driver exposes to this container, by bus id.
	GPUs []GPU `json:"gpus"`
}

// GPU is one entry of /proc/driver/nvidia/gpus.
type GPU struct {
	Model       string `json:"model"`
	UUID        string `json:"uuid,omitempty"`
	BusLocation string `json:"bus_location"`
	DeviceMinor int    `json:"device_minor"`
	// DeviceNode reports whether /dev/nvidia<minor> exists: without it
	// CUDA cannot open the GPU.
	DeviceNode bool `json:"device_node"`
}

// ReadDriver reads the driver version from <proc>/driver/nvidia/version and
// the GPUs from <proc>/driver/nvidia/gpus/*/information, and checks the
// device nodes under dev. A machine without the driver gives a zero Driver
// and no error.
func ReadDriver(proc, dev string) (Driver, error) {
	var d Driver
	b, err := readFile(filepath.Join(proc, "driver/nvidia/version"))
	if errors.Is(err, fs.ErrNotExist) {
		return d, nil
	}
	if err != nil {
		return d, fmt.Errorf("reading the NVIDIA driver version: %w", err)
	}
	d.Version, err = parseDriverVersion(string(b))
	if err != nil {
		return d, err
	}
	dirs, _ := filepath.Glob(filepath.Join(proc, "driver/nvidia/gpus/*/information"))
	for _, info := range dirs {
		g, err := readGPU(info)
		if err != nil {
			return d, err
		}
		if g.BusLocation == "" {
			g.BusLocation = filepath.Base(filepath.Dir(info))
		}
		_, err = os.Stat(filepath.Join(dev, "nvidia"+strconv.Itoa(g.DeviceMinor)))
		g.DeviceNode = err == nil
		d.GPUs = append(d.GPUs, g)
	}
	sort.Slice(d.GPUs, func(i, j int) bool { return d.GPUs[i].BusLocation < d.GPUs[j].BusLocation })
	return d, nil
}

// parseDriverVersion finds the version in the first line of
// /proc/driver/nvidia/version: "NVRM version: NVIDIA UNIX x86_64 Kernel
// Module  580.159.04  Thu ..." (or "... Open Kernel Module for x86_64 ...").
func parseDriverVersion(s string) (string, error) {
	line, _, _ := strings.Cut(s, "\n")
	if _, rest, ok := strings.Cut(line, "Module"); ok {
		line = rest
	}
	for _, f := range strings.Fields(line) {
		if strings.Contains(f, ".") {
			if _, err := version.Parse(f); err == nil {
				return f, nil
			}
		}
	}
	return "", fmt.Errorf("no driver version in %q", strings.TrimSpace(line))
}

func readGPU(path string) (GPU, error) {
	b, err := readFile(path)
	if err != nil {
		return GPU{}, fmt.Errorf("reading GPU information: %w", err)
	}
	var g GPU
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch strings.TrimSpace(k) {
		case "Model":
			g.Model = v
		case "GPU UUID":
			g.UUID = v
		case "Bus Location":
			g.BusLocation = v
		case "Device Minor":
			g.DeviceMinor, _ = strconv.Atoi(v)
		}
	}
	return g, sc.Err()
}

// DriverTooOldError says the driver is below the image's floor.
type DriverTooOldError struct {
	Found, Floor, CUDA string
}

func (e *DriverTooOldError) Error() string {
	img := "this image"
	if e.CUDA != "" {
		img = "this image (CUDA " + e.CUDA + ")"
	}
	return fmt.Sprintf("NVIDIA driver %s is older than %s needs (>= %s): upgrade the host driver to %s or newer, or run an image built for an older CUDA", e.Found, img, e.Floor, e.Floor)
}

// ExitCode implements exitcode.Coder.
func (e *DriverTooOldError) ExitCode() int { return exitcode.DriverTooOld }

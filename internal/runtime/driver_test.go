package runtime

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"imagectl/internal/exitcode"
)

func TestParseDriverVersion(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		wantErr        bool
	}{
		{name: "proprietary", in: "NVRM version: NVIDIA UNIX x86_64 Kernel Module  525.60.13  Wed Nov 30 06:39:21 UTC 2022\nGCC version:  gcc version 11.3.0\n", want: "525.60.13"},
		{name: "open", in: "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (dvs-builder@U16-I3-B13-3-2)  Tue Oct 21 2025\nGCC version: gcc version 13.3.0\n", want: "580.159.04"},
		{name: "two parts", in: "NVRM version: NVIDIA UNIX x86_64 Kernel Module  390.157  Wed Oct 12 09:19:07 UTC 2022\n", want: "390.157"},
		{name: "garbage", in: "hello\n", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseDriverVersion(tc.in)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("parseDriverVersion(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// fakeGPUHost writes a /proc and /dev with the given driver version and
// GPUs (minor numbers); nodes lists the minors that get a device node.
func fakeGPUHost(t *testing.T, version string, minors []int, nodes []int) (proc, dev string) {
	t.Helper()
	proc, dev = t.TempDir(), t.TempDir()
	if version == "" {
		return proc, dev
	}
	write(t, filepath.Join(proc, "driver/nvidia/version"), "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  "+version+"  Release Build  (dvs-builder@U16)  Tue Oct 21 2025\nGCC version: gcc version 13.3.0\n")
	for _, m := range minors {
		bus := []string{"0000:19:00.0", "0000:3b:00.0", "0000:4c:00.0"}[m]
		write(t, filepath.Join(proc, "driver/nvidia/gpus", bus, "information"),
			"Model: \t\t NVIDIA H200\nIRQ:   \t\t 17\nGPU UUID: \t GPU-0000000"+string(rune('0'+m))+"-aaaa-bbbb-cccc-dddddddddddd\nVideo BIOS: \t 96.00.af.00.01\nBus Type: \t PCIe\nDMA Size: \t 52 bits\nDMA Mask: \t 0xfffffffffffff\nBus Location: \t "+bus+"\nDevice Minor: \t "+string(rune('0'+m))+"\nGPU Excluded:\t No\n")
	}
	for _, n := range append([]string{"nvidiactl", "nvidia-uvm"}, nodeNames(nodes)...) {
		write(t, filepath.Join(dev, n), "")
	}
	return proc, dev
}

func nodeNames(minors []int) []string {
	var out []string
	for _, m := range minors {
		out = append(out, "nvidia"+string(rune('0'+m)))
	}
	return out
}

func write(t testing.TB, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReadDriver(t *testing.T) {
	proc, dev := fakeGPUHost(t, "580.159.04", []int{1, 0}, []int{0})
	d, err := ReadDriver(proc, dev)
	if err != nil {
		t.Fatalf("ReadDriver: %v", err)
	}
	if d.Version != "580.159.04" || len(d.GPUs) != 2 {
		t.Fatalf("ReadDriver = %+v, want version 580.159.04 and 2 GPUs", d)
	}
	g0, g1 := d.GPUs[0], d.GPUs[1]
	if g0.BusLocation != "0000:19:00.0" || g0.Model != "NVIDIA H200" || g0.DeviceMinor != 0 || !g0.DeviceNode || g0.UUID == "" {
		t.Errorf("GPUs[0] = %+v", g0)
	}
	if g1.DeviceMinor != 1 || g1.DeviceNode {
		t.Errorf("GPUs[1] = %+v, want minor 1 without a device node", g1)
	}

	none, _ := fakeGPUHost(t, "", nil, nil)
	d, err = ReadDriver(none, dev)
	if err != nil || d.Version != "" || len(d.GPUs) != 0 {
		t.Errorf("ReadDriver(no driver) = %+v, %v; want zero, nil", d, err)
	}
}

func TestCheckDriver(t *testing.T) {
	cfg := Config{DriverFloor: "525.60.13", Image: ImageFacts{CUDA: "12.4"}}
	err := checkDriver(cfg, Driver{Version: "470.239.06"})
	var old *DriverTooOldError
	if !errors.As(err, &old) {
		t.Fatalf("checkDriver(470.239.06) = %v, want *DriverTooOldError", err)
	}
	if got := exitcode.Code(err); got != exitcode.DriverTooOld {
		t.Errorf("exit code = %d, want %d", got, exitcode.DriverTooOld)
	}
	for _, want := range []string{"470.239.06", "525.60.13", "CUDA 12.4", "upgrade"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q does not name %q", err, want)
		}
	}
	if err := checkDriver(cfg, Driver{Version: "525.105.17"}); err != nil {
		t.Errorf("checkDriver(525.105.17) = %v, want nil", err)
	}
	if err := checkDriver(cfg, Driver{}); !errors.Is(err, errNoDriver) {
		t.Errorf("checkDriver(no driver) = %v, want errNoDriver", err)
	}
	if err := checkDriver(Config{}, Driver{}); err != nil {
		t.Errorf("checkDriver(no floor) = %v, want nil", err)
	}
}

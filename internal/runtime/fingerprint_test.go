package runtime

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDiffFingerprints(t *testing.T) {
	a := Fingerprint{Version: 1, CollectedAt: "2026-11-30T00:00:00Z", Arch: "amd64", CPUs: 16, Swappiness: 60,
		Driver: Driver{Version: "580.159.04", GPUs: []GPU{{Model: "NVIDIA H200", BusLocation: "0000:19:00.0"}, {Model: "NVIDIA H200", BusLocation: "0000:3b:00.0"}}},
		Shm:    ShmResult{Path: "/dev/shm", Bytes: 256 << 30}}
	b := a
	b.CollectedAt = "2026-12-01T00:00:00Z" // ignored
	b.Driver = Driver{Version: "550.54.14", GPUs: []GPU{{Model: "NVIDIA H100 80GB HBM3", BusLocation: "0000:19:00.0"}}}
	b.Shm.Bytes = 64 << 20
	got, err := DiffFingerprints(a, b)
	if err != nil {
		t.Fatal(err)
	}
	want := []Difference{
		{Field: "driver.gpus.count", A: "2", B: "1"},
		{Field: "driver.gpus[0].model", A: "NVIDIA H200", B: "NVIDIA H100 80GB HBM3"},
		{Field: "driver.gpus[1].bus_location", A: "0000:3b:00.0"},
		{Field: "driver.gpus[1].device_minor", A: "0"},
		{Field: "driver.gpus[1].device_node", A: "false"},
		{Field: "driver.gpus[1].model", A: "NVIDIA H200"},
		{Field: "driver.version", A: "580.159.04", B: "550.54.14"},
		{Field: "shm.bytes", A: "274877906944", B: "67108864"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("DiffFingerprints (-want +got):\n%s", d)
	}
	if same, _ := DiffFingerprints(a, a); len(same) != 0 {
		t.Errorf("DiffFingerprints(a, a) = %v, want none", same)
	}
}

package runtime

import (
	"strings"
	"testing"
)

const sampleMountinfo = `22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
25 24 0:23 / /dev/shm rw,nosuid,nodev - tmpfs shm rw,size=65536k
40 27 0:50 / /storage rw,relatime shared:7 - nfs4 10.0.0.5:/export/team rw,vers=4.1,rsize=1048576
41 27 0:51 / /mnt/with\040space rw - tmpfs tmpfs rw
42 40 0:52 / /storage rw,noatime - tmpfs over rw
`

func TestParseMountinfo(t *testing.T) {
	ms, err := parseMountinfo(strings.NewReader(sampleMountinfo))
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 6 {
		t.Fatalf("parseMountinfo: %d mounts, want 6", len(ms))
	}
	if got := ms[3]; got.MountPoint != "/storage" || got.FSType != "nfs4" || got.Source != "10.0.0.5:/export/team" || got.Options != "rw,relatime,rw,vers=4.1,rsize=1048576" {
		t.Errorf("mount 3 = %+v", got)
	}
	if _, ok := mountAt(ms, "/mnt/with space"); !ok {
		t.Errorf("mountAt(%q) not found: \\040 not unescaped", "/mnt/with space")
	}
	// The later of two mounts on one point is the visible one.
	if m, ok := mountAt(ms, "/storage/"); !ok || m.FSType != "tmpfs" {
		t.Errorf("mountAt(/storage) = %+v, %v; want the tmpfs on top", m, ok)
	}
	if _, ok := mountAt(ms, "/data"); ok {
		t.Errorf("mountAt(/data) found a mount, want none")
	}
	if m, ok := mountOf(ms, "/storage/cache/x"); !ok || m.MountPoint != "/storage" {
		t.Errorf("mountOf(/storage/cache/x) = %+v", m)
	}
	if m, ok := mountOf(ms, "/storagex/y"); !ok || m.MountPoint != "/" {
		t.Errorf("mountOf(/storagex/y) = %+v, want /", m)
	}
}

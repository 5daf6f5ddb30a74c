package resolve

import (
	"context"
	"strings"
	"testing"

	"github.com/moby/buildkit/solver/pb"

	"imagectl/internal/lock"
)

func TestJobDefinition(t *testing.T) {
	j := Job{
		Name:   "pip resolve",
		Image:  "127.0.0.1:5000/imagectl/debian-base@sha256:" + strings.Repeat("a", 64),
		Debs:   []lock.Deb{{Name: "jq", Version: "1.6-2.1", Arch: "amd64", URL: "http://m/jq.deb", SHA256: strings.Repeat("b", 64)}},
		Files:  map[string][]byte{"requirements.txt": []byte("demo-core\n")},
		Script: "true",
		Netrc:  true,
	}
	def, err := j.Definition(context.Background())
	if err != nil {
		t.Fatalf("Definition() = %v", err)
	}
	var execs, https int
	var sawSecret, sawHost, sawIgnoreCache bool
	for _, dt := range def.Def {
		var op pb.Op
		if err := op.UnmarshalVT(dt); err != nil {
			t.Fatal(err)
		}
		if src := op.GetSource(); src != nil && strings.HasPrefix(src.Identifier, "http") {
			https++
			if src.Attrs["http.checksum"] != "sha256:"+strings.Repeat("b", 64) {
				t.Errorf("deb source %s has checksum %q, want the locked sha256", src.Identifier, src.Attrs["http.checksum"])
			}
		}
		if ex := op.GetExec(); ex != nil {
			execs++
			if ex.Network == pb.NetMode_HOST {
				sawHost = true
			}
			for _, m := range ex.Mounts {
				if m.MountType == pb.MountType_SECRET && m.SecretOpt.GetID() == netrcSecret && m.Dest == "/root/.netrc" {
					sawSecret = true
				}
			}
		}
	}
	for _, md := range def.Metadata {
		if md.IgnoreCache {
			sawIgnoreCache = true
		}
	}
	// The steps run on the worker's default network (docs/lock.md), never
	// asking for the network.host entitlement.
	if execs != 2 || https != 1 || !sawSecret || sawHost || !sawIgnoreCache {
		t.Errorf("Definition(): %d execs, %d http sources, secret %v, host network %v, ignore cache %v; want 2, 1, true, false, true", execs, https, sawSecret, sawHost, sawIgnoreCache)
	}
}

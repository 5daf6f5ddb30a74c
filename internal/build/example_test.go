package build_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/moby/buildkit/solver/pb"

	"imagectl/internal/build"
	"imagectl/internal/build/layerplan"
	"imagectl/internal/lock"
)

func exampleLock() *lock.Lock {
	return &lock.Lock{
		Name:            "demo",
		SourceDateEpoch: 1700000000,
		Frozen:          []string{"demo-core"},
		Base: lock.Base{
			Ref:            "registry.example.invalid/imagectl/debian-base:bookworm",
			ManifestDigest: "sha256:" + fmt.Sprintf("%064x", 1),
		},
		Python: lock.Python{Version: "3.11.2", Path: "/usr/bin/python3.11", Provider: "base"},
		Resolver: lock.Wheel{Name: "pip", Version: "23.0.1", Filename: "pip-23.0.1-py3-none-any.whl",
			URL: "http://whl.example.invalid/pip-23.0.1-py3-none-any.whl", SHA256: fmt.Sprintf("%064x", 5)},
		Apt: []lock.Deb{{Name: "jq", Version: "1.6-2.1", Arch: "amd64",
			URL: "http://deb.example.invalid/jq.deb", SHA256: fmt.Sprintf("%064x", 2)}},
		Pip: []lock.Wheel{
			{Name: "demo-util", Version: "1.1.0", Filename: "demo_util-1.1.0-py3-none-any.whl",
				URL: "http://whl.example.invalid/demo_util-1.1.0-py3-none-any.whl", SHA256: fmt.Sprintf("%064x", 3)},
			{Name: "demo-core", Version: "1.0.0", Filename: "demo_core-1.0.0-py3-none-any.whl",
				URL: "http://whl.example.invalid/demo_core-1.0.0-py3-none-any.whl", SHA256: fmt.Sprintf("%064x", 4)},
		},
	}
}

// Plan orders the layers by how rarely they change.
func ExamplePlan() {
	for _, layer := range layerplan.Of(exampleLock()).Layers {
		fmt.Println(layer.Name)
	}
	// Output:
	// base
	// system
	// venv
	// big:demo-core
	// periphery
	// init
	// runtime
}

// Definition is the LLB Solve sends, inspectable without a daemon.
func ExampleDefinition() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	initPath := filepath.Join(dir, "imagectl-init")
	_ = os.WriteFile(initPath, []byte("init"), 0o755)

	def, err := build.Definition(context.Background(), exampleLock(), build.WithInit(initPath))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, dt := range def.Def {
		var op pb.Op
		_ = op.UnmarshalVT(dt)
		if src := op.GetSource(); src != nil {
			fmt.Println(src.Identifier, src.Attrs[pb.AttrHTTPChecksum] != "")
		}
	}
	// Unordered output:
	// docker-image://registry.example.invalid/imagectl/debian-base@sha256:0000000000000000000000000000000000000000000000000000000000000001 false
	// http://deb.example.invalid/jq.deb true
	// http://whl.example.invalid/pip-23.0.1-py3-none-any.whl true
	// http://whl.example.invalid/demo_core-1.0.0-py3-none-any.whl true
	// http://whl.example.invalid/demo_util-1.1.0-py3-none-any.whl true
}

// ParseBuilders reads --builder values; DialBuilders connects to them and
// gives Solve one WithPlatformClient option per platform.
func ExampleParseBuilders() {
	bs, err := build.ParseBuilders([]string{"linux/arm64=tcp://arm64-builder:1234"})
	if err != nil {
		fmt.Println(err)
		return
	}
	tls := build.TLS{CACert: "certs/ca.pem", Cert: "certs/client.pem", Key: "certs/client-key.pem"}
	// With the builders up:
	//   opts, closeAll, err := build.DialBuilders(ctx, bs, tls, 10*time.Second)
	//   res, err := build.Solve(ctx, amd64Client, l, append(opts, build.WithPush(true))...)
	fmt.Println(bs[0].Platform, bs[0].Addr, tls.Enabled())
	// Output:
	// linux/arm64 tcp://arm64-builder:1234 true
}

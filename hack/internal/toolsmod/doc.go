// Package toolsmod holds the check that keeps tools/go.mod (buildkitd,
// buildctl, the registry, crane, cosign, containerd) on the same versions as
// the main module for every module both require. The Go build cache is keyed
// by what a package was compiled from: with one version of BuildKit's client,
// ggcr, gRPC, golang.org/x/sys and the rest, `make build` reuses the packages
// `hack/tools.sh demo` compiled, which is most of what makes a cold
// `make demo` minutes shorter (docs/development.md).
package toolsmod

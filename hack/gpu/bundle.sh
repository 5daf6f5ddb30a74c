#!/usr/bin/env bash
# Builds what hack/gpu/e2e.sh carries to the GPU machine (nothing there can
# be fetched) and writes it, xz-compressed, into DEST (default .gpu/, which
# git ignores; the device tool carries it with `carry: [".gpu"]`):
#   imagectl (cgo: go-nvml; dynamic glibc, which the GPU machine has),
#   imagectl-init and gputool (static: the run's helpers, ggcr's registry
#   among them), and from bin/ (make tools, hack/tools.sh gpu) buildkitd,
#   containerd, its runc shim,
#   nvidia-ctk and nvidia-cdi-hook, stripped, plus the system's runc.
# The device tool carries at most 64 MiB per call: the script prints the size.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
dest=${1:-$root/.gpu}
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
export CGO_CFLAGS="-O2 -g -Wno-deprecated-declarations"
hack/tools.sh >&2
hack/tools.sh gpu >&2
hack/tools.sh stargz >&2
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
go build -trimpath -ldflags '-s -w' -o "$stage/imagectl" ./cmd/imagectl
CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$stage/imagectl-init" ./cmd/imagectl-init
CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$stage/gputool" ./hack/gpu/gputool
for t in buildkitd containerd containerd-shim-runc-v2 containerd-stargz-grpc nvidia-ctk nvidia-cdi-hook; do
  strip -o "$stage/$t" "bin/$t"
done
cp "$(command -v runc)" "$stage/runc"
hack/gpu/pack.sh "$stage" "$dest"

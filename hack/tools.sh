#!/usr/bin/env bash
# Builds the tools pinned in tools/go.mod into ./bin: buildkitd, buildctl, the
# distribution registry, crane and cosign. tools/ is its own module so that the
# daemons' dependencies never move the main module's. A tool whose binary is
# newer than tools/go.mod and tools/go.sum is not rebuilt.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export GOTOOLCHAIN=local
export GOFLAGS=-buildvcs=false

declare -A pkgs=(
  [buildkitd]=github.com/moby/buildkit/cmd/buildkitd
  [buildctl]=github.com/moby/buildkit/cmd/buildctl
  [registry]=github.com/distribution/distribution/v3/cmd/registry
  [crane]=github.com/google/go-containerregistry/cmd/crane
  [cosign]=github.com/sigstore/cosign/v2/cmd/cosign
)
order=(buildkitd buildctl registry crane cosign)

stale=()
for t in "${order[@]}"; do
  b="$root/bin/$t"
  if [ -x "$b" ] && [ "$b" -nt tools/go.sum ] && [ "$b" -nt tools/go.mod ]; then
    continue
  fi
  stale+=("${pkgs[$t]}")
done
if [ ${#stale[@]} -eq 0 ]; then
  echo "tools: up to date in bin/" >&2
  exit 0
fi

mkdir -p "$root/bin"
echo "tools: building ${stale[*]##*/} (cold: several minutes)" >&2
start=$(date +%s)
# BuildKit reports its version only through -X; take it from tools/go.mod.
bkver=$(cd tools && go list -m -f '{{.Version}}' github.com/moby/buildkit)
ldflags="-X github.com/moby/buildkit/version.Version=$bkver -X github.com/moby/buildkit/version.Package=github.com/moby/buildkit"
# One go build for all stale tools: they share most of their dependencies.
(cd tools && go build -trimpath -ldflags "$ldflags" -o "$root/bin/" "${stale[@]}")
echo "tools: built in $(( $(date +%s) - start ))s" >&2

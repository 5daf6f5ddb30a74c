#!/usr/bin/env bash
# Builds NVIDIA's k8s-device-plugin for the GPU node of the Kubernetes verify
# (issue 24) into bin/nvidia-device-plugin, stripped. The module proxy
# refuses github.com/NVIDIA/k8s-device-plugin (403), so the source is the
# repository as the session's `fetch` tool mirrors it (a bare git dir; pass
# it as $1 or DP_GIT). The tag is pinned: v0.20.0 (2026-08-19; kubelet API
# v0.36, nvidia-container-toolkit v1.20.0, go-nvml v0.13.3-1, go 1.26.0),
# CDI-capable (--device-list-strategy cdi-cri / cdi-annotations). cgo: it
# dlopens libnvidia-ml.so.1 at run time, so it links glibc dynamically; built
# on Debian bookworm (glibc 2.36) it runs on Ubuntu 24.04 (glibc 2.39).
#   hack/gpu/device-plugin.sh /work/.mirror/NVIDIA+k8s-device-plugin/repo
# CI cannot fetch: this binary only serves GPU-machine runs.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
tag=${DP_TAG:-v0.20.0}
git_dir=${1:-${DP_GIT:?usage: hack/gpu/device-plugin.sh GIT_DIR (the fetched NVIDIA/k8s-device-plugin)}}
src=$root/.cache/gpu-build/k8s-device-plugin-$tag
out=$root/bin/nvidia-device-plugin
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
# go-nvml declares functions CUDA 13 deprecates: keep the log readable.
export CGO_CFLAGS="-O2 -g -Wno-deprecated-declarations"
if [ ! -f "$src/go.mod" ]; then
  rm -rf "$src.tmp" && mkdir -p "$src.tmp"
  # Only what the build reads: tests/ has vendored files the mirror lacks.
  git --git-dir="$git_dir" archive --format=tar "$tag" -- go.mod go.sum api cmd internal vendor | tar -C "$src.tmp" -xf -
  mv "$src.tmp" "$src"
fi
commit=$(git --git-dir="$git_dir" rev-list -n1 "$tag")
mkdir -p "$root/bin"
# The version the plugin logs at start (its Makefile sets the same variables).
(cd "$src" && CGO_ENABLED=1 go build -mod=vendor -trimpath \
  -ldflags "-s -w -X github.com/NVIDIA/k8s-device-plugin/internal/info.version=$tag -X github.com/NVIDIA/k8s-device-plugin/internal/info.gitCommit=$commit" \
  -o "$out.tmp" ./cmd/nvidia-device-plugin)
mv "$out.tmp" "$out"
echo "nvidia-device-plugin $tag ($commit): $(stat -c %s "$out") bytes, needs $(objdump -T "$out" 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -Vu | tail -n1)" >&2

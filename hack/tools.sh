#!/usr/bin/env bash
# Builds the tools pinned in tools/go.mod into ./bin, one set at a time:
#
#   hack/tools.sh demo   what `make demo` uses: buildkitd, buildctl, the
#                        distribution registry, crane
#   hack/tools.sh        what `make test` uses: the demo's, cosign,
#                        containerd and its runc shim, the admission policy
#                        engines (policy-tester, kyverno) and promtool
#   hack/tools.sh gpu    the GPU host's tools pinned in tools/gpu/go.mod
#                        (NVIDIA's nvidia-ctk and nvidia-cdi-hook), which only
#                        the GPU machine runs (hack/gpu/)
#   hack/tools.sh stargz bin/containerd-stargz-grpc from tools/stargz:
#                        stargz-snapshotter's lazy-pull snapshotter (its
#                        main, over the library module the proxy serves;
#                        upstream's cmd module is not served), static, for
#                        hack/containerd.sh here and the GPU host; part of
#                        the default set too
#   hack/tools.sh k8s    bin/kube from tools/k8s (hack/k8s.sh, `make up K8S=1`):
#                        etcd, the control plane and the kubelet in one static
#                        binary, stale when the kubernetes or etcd version
#                        recorded in it differs from tools/k8s/go.mod's; cold ~9 min
#   hack/tools.sh lint   the linters `make lint` runs, pinned in tools/lint/go.mod:
#                        staticcheck and deadcode (golang.org/x/tools); cold ~1 min
#
# tools/ and tools/gpu/ are modules of their own so that the daemons'
# dependencies never move the main module's (nor the toolkit's move the
# daemons').
#
# Staleness is per tool: a binary is rebuilt only when it is missing or the
# version of its module recorded in it (go version -m) differs from the
# version its go.mod pins. Adding a tool, or moving one tool's version,
# rebuilds only that tool.
#
# Groups that share no compiled packages build at once, IMAGECTL_TOOLS_JOBS
# (default 2) at a time; each `go build` already uses every core, so the gain
# is in what is not compiling (module downloads, links). The demo group is
# built without -trimpath, like `make build`, so that bin/imagectl reuses the
# BuildKit, ggcr and gRPC packages it compiled (one Go build cache). Each
# build prints what it builds, about how long it took cold on 2 cores, and a
# line a minute while it runs.
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
  [containerd]=github.com/containerd/containerd/v2/cmd/containerd
  [containerd-shim-runc-v2]=github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2
  [ctr]=github.com/containerd/containerd/v2/cmd/ctr
  [nvidia-ctk]=github.com/NVIDIA/nvidia-container-toolkit/cmd/nvidia-ctk
  [nvidia-cdi-hook]=github.com/NVIDIA/nvidia-container-toolkit/cmd/nvidia-cdi-hook
  [policy-tester]=github.com/sigstore/policy-controller/cmd/tester
  [kyverno]=github.com/kyverno/kyverno/cmd/cli/kubectl-kyverno
  [kube]=imagectl/tools/k8s/kube
  [promtool]=github.com/prometheus/prometheus/cmd/promtool
  [containerd-stargz-grpc]=imagectl/tools/stargz/containerd-stargz-grpc
  [staticcheck]=honnef.co/go/tools/cmd/staticcheck
  [deadcode]=golang.org/x/tools/cmd/deadcode
)
# Tools whose go.mod has replace lines of its own get a module of their own
# (copied replace lines; their dependencies never move the daemons'):
# sigstore policy-controller's policy-tester and the Kyverno CLI, the
# admission engines the policy tests run (internal/policy).
declare -A moddirs=(
  [policy-tester]=tools/policy-tester
  [kyverno]=tools/kyverno
  [kube]=tools/k8s
  [promtool]=tools/promtool
  [containerd-stargz-grpc]=tools/stargz
  [staticcheck]=tools/lint
  [deadcode]=tools/lint
)
# Each group is one go build: its tools share most of their dependencies.
# containerd and its shim are static (CGO off) and stripped, like the
# release binaries containerd ships, so the same files run on the GPU host.
demo="buildkitd buildctl registry crane"
case "${1:-}" in
  demo) moddir=tools groups=("$demo") ;;
  "") moddir=tools groups=("$demo cosign" "containerd containerd-shim-runc-v2 ctr" "policy-tester" "kyverno" "promtool" "containerd-stargz-grpc") ;;
  stargz) moddir=tools/stargz groups=("containerd-stargz-grpc") ;;
  gpu) moddir=tools/gpu groups=("nvidia-ctk nvidia-cdi-hook") ;;
  k8s) moddir=tools/k8s groups=("kube") ;; # hack/k8s.sh's cluster
  lint) moddir=tools/lint groups=("staticcheck deadcode") ;; # make lint
  *) echo "usage: hack/tools.sh [demo|gpu|k8s|stargz|lint]" >&2; exit 2 ;;
esac
jobs=${IMAGECTL_TOOLS_JOBS:-2}

# cold TOOL: about how long its group took cold on a quiet 2-core machine
# with an empty Go build cache (measured 2026-12-03; printed as a guide).
cold() {
  case "$1" in
    buildkitd | buildctl | registry | crane) echo "~5 min" ;;
    cosign) echo "~3 min after the demo group" ;;
    containerd | containerd-shim-runc-v2 | ctr) echo "~1.5 min" ;;
    policy-tester) echo "~4 min" ;;
    kyverno) echo "~7.5 min" ;;
    promtool) echo "~5 min" ;;
    kube) echo "~9 min" ;;
    containerd-stargz-grpc) echo "~3 min" ;;
    staticcheck | deadcode) echo "~1 min" ;;
    *) echo "a few minutes" ;;
  esac
}

# want TOOL: the version tools' go.mod pins for the module of TOOL's package.
# kube, a main package of tools/k8s itself: the kubernetes and etcd versions.
k8smods="k8s.io/kubernetes go.etcd.io/etcd/server/v3"
# containerd-stargz-grpc, a main package of tools/stargz: the
# stargz-snapshotter library's version.
stargzmod=github.com/containerd/stargz-snapshotter
want() {
  if [ "$1" = kube ]; then (cd tools/k8s && go list -m -f '{{.Version}}' $k8smods | xargs); return; fi
  if [ "$1" = containerd-stargz-grpc ]; then (cd tools/stargz && go list -m -f '{{.Version}}' $stargzmod); return; fi
  (cd "${moddirs[$1]:-$moddir}" && go list -f '{{.Module.Version}}' "${pkgs[$1]}")
}
# have TOOL: the version of its module recorded in bin/TOOL, or nothing.
have() {
  if [ "$1" = kube ]; then
    go version -m "$root/bin/kube" 2>/dev/null | awk -v m="$k8smods" 'BEGIN { n = split(m, a, " ") } $1 == "dep" { v[$2] = $3 } END { for (i = 1; i <= n; i++) printf "%s%s", v[a[i]], (i < n ? " " : "\n") }'
    return
  fi
  if [ "$1" = containerd-stargz-grpc ]; then
    go version -m "$root/bin/$1" 2>/dev/null | awk -v m=$stargzmod '$1 == "dep" && $2 == m { print $3; exit }'
    return
  fi
  go version -m "$root/bin/$1" 2>/dev/null | awk '$1 == "mod" { print $3; exit }'
}

# build TOOLS...: one go build of TOOLS (one group, all stale), with a line
# a minute while it runs; its output goes to stderr.
build() {
  local stale=("$@") args=() t ldflags tags start ticker rc=0
  for t in "${stale[@]}"; do args+=("${pkgs[$t]}"); done
  echo "tools: building ${stale[*]} (cold: $(cold "${stale[0]}") on 2 cores; cached afterwards)" >&2
  start=$(date +%s)
  ( while sleep 60 </dev/null >/dev/null 2>&1; do echo "tools: still building ${stale[*]} ($(( ($(date +%s) - start) / 60 )) min)" >&2; done ) &
  ticker=$!
  case "${stale[0]}" in
    buildkitd | buildctl | registry | crane | cosign)
      # BuildKit reports its version only through -X; take it from tools/go.mod.
      # No -trimpath: `make build` compiles bin/imagectl without it, and
      # shares the packages compiled here (BuildKit's client, ggcr, gRPC).
      bkver=$(cd tools && go list -m -f '{{.Version}}' github.com/moby/buildkit)
      ldflags="-X github.com/moby/buildkit/version.Version=$bkver -X github.com/moby/buildkit/version.Package=github.com/moby/buildkit"
      (cd "$moddir" && go build -ldflags "$ldflags" -o "$root/bin/" "${args[@]}") || rc=$?
      ;;
    containerd | containerd-shim-runc-v2 | ctr)
      cver=$(cd tools && go list -m -f '{{.Version}}' github.com/containerd/containerd/v2)
      ldflags="-s -w -X github.com/containerd/containerd/v2/version.Version=$cver -X github.com/containerd/containerd/v2/version.Package=github.com/containerd/containerd/v2"
      (cd "$moddir" && CGO_ENABLED=0 go build -trimpath -tags "no_btrfs no_zfs no_devmapper" -ldflags "$ldflags" -o "$root/bin/" "${args[@]}") || rc=$?
      ;;
    policy-tester | kyverno | promtool)
      # One tool each, named for what it is (the packages are cmd/tester and
      # kubectl-kyverno); Kyverno reports its version only through -X.
      t=${stale[0]} ldflags="-s -w"
      [ "$t" = kyverno ] && ldflags+=" -X github.com/kyverno/kyverno/pkg/version.BuildVersion=$(want kyverno)"
      # promtool: Prometheus' own build tag leaves out the service-discovery
      # plugins (AWS, Azure, GCE, ... SDKs) that rule and metric checks never use.
      tags=
      [ "$t" = promtool ] && tags=remove_all_sd
      (cd "${moddirs[$t]}" && go build -trimpath -tags "$tags" -ldflags "$ldflags" -o "$root/bin/$t" "${args[@]}") || rc=$?
      ;;
    containerd-stargz-grpc)
      # Static and stripped, like containerd: the same file runs on the GPU host.
      (cd "${moddirs[$1]}" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$root/bin/" "${args[@]}") || rc=$?
      ;;
    kube)
      # One static multi-call binary (tools/k8s/kube); without -X the
      # components report v0.0.0 and the kubelet's version skew checks fail.
      kv=$(cd tools/k8s && go list -m -f '{{.Version}}' k8s.io/kubernetes)
      minor=${kv#v1.}; minor=${minor%%.*}
      ldflags="-s -w"
      for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
        ldflags="$ldflags -X $p.gitVersion=$kv -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
      done
      (cd "${moddirs[kube]}" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$root/bin/" "${args[@]}") || rc=$?
      ;;
    staticcheck | deadcode)
      (cd "$moddir" && go build -trimpath -ldflags "-s -w" -o "$root/bin/" "${args[@]}") || rc=$?
      ;;
    *)
      # go-nvml declares functions CUDA 13 deprecates: keep the log readable.
      (cd "$moddir" && CGO_CFLAGS="-O2 -g -Wno-deprecated-declarations" go build -trimpath -ldflags "-s -w" -o "$root/bin/" "${args[@]}") || rc=$?
      ;;
  esac
  kill "$ticker" 2>/dev/null; wait "$ticker" 2>/dev/null || true # a killed ticker waits as 143
  if [ "$rc" -ne 0 ]; then
    echo "tools: building ${stale[*]} failed (exit $rc)" >&2
    return "$rc"
  fi
  echo "tools: built ${stale[*]} in $(( $(date +%s) - start ))s" >&2
}

mkdir -p "$root/bin"
pids=() names=()
for group in "${groups[@]}"; do
  stale=()
  for t in $group; do
    v=$(want "$t")
    if [ -x "$root/bin/$t" ] && [ "$(have "$t")" = "$v" ]; then
      continue
    fi
    stale+=("$t")
  done
  [ ${#stale[@]} -eq 0 ] && continue
  # At most $jobs builds at once: wait for the oldest before starting another.
  if [ ${#pids[@]} -ge "$jobs" ]; then
    wait "${pids[0]}" || { echo "tools: ${names[0]} failed" >&2; kill "${pids[@]:1}" 2>/dev/null; exit 1; }
    pids=("${pids[@]:1}") names=("${names[@]:1}")
  fi
  build "${stale[@]}" &
  pids+=($!) names+=("${stale[*]}")
done
[ ${#pids[@]} -eq 0 ] && { echo "tools: up to date in bin/" >&2; exit 0; }
rc=0
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || { echo "tools: ${names[$i]} failed" >&2; rc=1; }
done
exit "$rc"

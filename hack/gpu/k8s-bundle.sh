#!/usr/bin/env bash
# Builds what hack/gpu/k8s-e2e.sh carries to the GPU machine, split into
# parts the device tool can carry one per call (at most 64 MiB per call,
# the repository's working tree included), and prints the device calls.
# Each file is NAME.xz beside NAME.sha256 (hack/gpu/pack.sh):
#   e2e.sh's tools (hack/gpu/bundle.sh -> .gpu/src-e2e): imagectl (with the
#     kubernetes runtime), imagectl-init, gputool, buildkitd, runc,
#     containerd, its shim, nvidia-ctk, nvidia-cdi-hook
#   the cluster's (-> .gpu/src-k8s): bin/kube (etcd, control plane and
#     kubelet in one binary, hack/tools.sh k8s), bin/nvidia-device-plugin
#     (hack/gpu/device-plugin.sh), crane, the pki and pause helpers, and
#     Debian's CNI bridge, host-local and loopback (containernetworking-
#     plugins, make deps) as cni-*
# are filled, in that order, into .gpu/k8s1, .gpu/k8s2, ... each at most
# 64 MiB with the working tree. The setup and build phases go with the call
# whose part completes e2e.sh's tools, the cluster's phases with a later one.
#   hack/gpu/k8s-bundle.sh        build, split, check sizes, print the calls
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
limit=$((64 * 1048576))
[ -f hack/k8s.sh ] || { echo "k8s-bundle: hack/k8s.sh is missing: this tree lacks the k8s branch (issue 24)" >&2; exit 1; }
[ -x bin/nvidia-device-plugin ] || { echo "k8s-bundle: bin/nvidia-device-plugin is missing: run hack/gpu/device-plugin.sh GIT_DIR (the fetched NVIDIA/k8s-device-plugin)" >&2; exit 1; }
for t in bridge host-local loopback; do
  [ -x /usr/lib/cni/$t ] || { echo "k8s-bundle: /usr/lib/cni/$t is missing: run make deps (containernetworking-plugins)" >&2; exit 1; }
done
[ -x bin/kube ] || hack/tools.sh k8s >&2

hack/gpu/bundle.sh "$root/.gpu/src-e2e"

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
cp bin/kube bin/nvidia-device-plugin "$stage/"
strip -o "$stage/crane" bin/crane
go build -trimpath -ldflags '-s -w' -o "$stage/pki" ./hack/pki
CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$stage/pause" ./hack/pause
for t in bridge host-local loopback; do cp /usr/lib/cni/$t "$stage/cni-$t"; done
hack/gpu/pack.sh "$stage" "$root/.gpu/src-k8s"

# The working tree travels with every call (tracked and untracked files git
# does not ignore); 1 MiB is left for what the call adds.
tree=$(git ls-files -z -co --exclude-standard | du -cb --files0-from=- 2>/dev/null | tail -n1 | cut -f1)
cap=$((limit - tree - 1048576))
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
e2e=(imagectl imagectl-init gputool buildkitd runc containerd containerd-shim-runc-v2 nvidia-ctk nvidia-cdi-hook)
k8s=(kube nvidia-device-plugin crane pki pause cni-bridge cni-host-local cni-loopback)
rm -rf "$root"/.gpu/k8s[0-9]*
part=1 used=0 e2e_part=0
for n in "${e2e[@]}" "${k8s[@]}"; do
  src=.gpu/src-e2e
  [ -f "$src/$n.xz" ] || src=.gpu/src-k8s
  [ -f "$src/$n.xz" ] || { echo "k8s-bundle: $n.xz is in neither .gpu/src-e2e nor .gpu/src-k8s" >&2; exit 1; }
  size=$(stat -c %s "$src/$n.xz")
  [ "$size" -le "$cap" ] || { echo "k8s-bundle: $n.xz alone ($(mib "$size") MiB) exceeds a call's $(mib "$cap") MiB" >&2; exit 1; }
  if [ $((used + size)) -gt "$cap" ]; then part=$((part + 1)) used=0; fi
  mkdir -p .gpu/k8s$part
  cp "$src/$n.xz" "$src/$n.sha256" .gpu/k8s$part/
  used=$((used + size))
  for e in "${e2e[@]}"; do [ "$e" = "$n" ] && e2e_part=$part; done
  printf '  .gpu/k8s%d  %-26s %6s MiB xz  %7s MiB\n' "$part" "$n" "$(mib "$size")" "$(mib "$(xz -l --robot "$src/$n.xz" | awk '$1 == "totals" { print $5 }')")" >&2
done
for ((i = 1; i <= part; i++)); do
  echo "part .gpu/k8s$i: $(mib "$(du -cb .gpu/k8s$i/*.xz | tail -n1 | cut -f1)") MiB + working tree $(mib "$tree") MiB (cap $(mib "$limit"))" >&2
done

echo "Device calls, kind nvidia-h200, in order, each timeout_s 600, on a tree holding the k8s and gpu branches;"
echo "each must start within the machine's idle window after the one before (/tmp/g and the"
echo "repository's bin/ and .cache live only while it stays warm):"
call=0
for ((i = 1; i <= part; i++)); do
  phases=unpack env="K8S=1"
  [ $i = "$e2e_part" ] && phases+=" setup build" env+=" QUICK=1"
  if [ $i = "$part" ] && [ "$part" != "$e2e_part" ]; then phases+=" cluster plugin verify compare"; fi
  call=$((call + 1))
  echo "$call. carry [\".gpu/k8s$i\"]: $env bash hack/gpu/k8s-e2e.sh $phases"
done
if [ "$part" = "$e2e_part" ]; then
  call=$((call + 1))
  echo "$call. carry []: K8S=1 bash hack/gpu/k8s-e2e.sh cluster plugin verify compare"
fi
echo "If a call stops at a phase, repeat from that phase (carry []), e.g. K8S=1 bash hack/gpu/k8s-e2e.sh plugin verify"

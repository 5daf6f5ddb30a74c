#!/usr/bin/env bash
# Builds what hack/gpu/k8s-e2e.sh carries to the GPU machine, split into
# parts the device tool can carry one per call (at most 64 MiB per call,
# the repository's working tree included), and prints the device calls:
#   .gpu/k8s1  hack/gpu/bundle.sh's tools (imagectl with the kubernetes
#              runtime, imagectl-init, gputool, buildkitd, containerd, its
#              shim, runc, nvidia-ctk, nvidia-cdi-hook): e2e.sh setup + build
#   .gpu/k8s2  bin/kube (etcd, control plane and kubelet in one binary,
#              hack/tools.sh k8s), bin/nvidia-device-plugin
#              (hack/gpu/device-plugin.sh), crane, the cluster's pki and
#              pause helpers, Debian's CNI bridge, host-local and loopback
#              (containernetworking-plugins, make deps) as cni-*
# Each part holds NAME.xz and NAME.sha256 (hack/gpu/pack.sh).
#   hack/gpu/k8s-bundle.sh        build both parts, check sizes, print the calls
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

hack/gpu/bundle.sh "$root/.gpu/k8s1"

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
cp bin/kube bin/nvidia-device-plugin "$stage/"
strip -o "$stage/crane" bin/crane
go build -trimpath -ldflags '-s -w' -o "$stage/pki" ./hack/pki
CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$stage/pause" ./hack/pause
for t in bridge host-local loopback; do cp /usr/lib/cni/$t "$stage/cni-$t"; done
# Only this stage's files: a part keeps no file of an older bundle.
for f in "$root"/.gpu/k8s2/*.xz; do
  [ -e "$f" ] && [ ! -e "$stage/$(basename "$f" .xz)" ] && rm -f "$f" "${f%.xz}.sha256"
done
hack/gpu/pack.sh "$stage" "$root/.gpu/k8s2"

# The working tree travels with every call (tracked and untracked files git
# does not ignore).
tree=$(git ls-files -z -co --exclude-standard | du -cb --files0-from=- 2>/dev/null | tail -n1 | cut -f1)
ok=1
for p in k8s1 k8s2; do
  part=$(du -cb .gpu/$p | tail -n1 | cut -f1)
  printf 'part .gpu/%s: %.1f MiB + working tree %.1f MiB = %.1f MiB of 64\n' $p "$(echo "$part / 1048576" | bc -l)" "$(echo "$tree / 1048576" | bc -l)" "$(echo "($part + $tree) / 1048576" | bc -l)" >&2
  for f in .gpu/$p/*.xz; do printf '  %-28s %8.1f MiB xz, %8.1f MiB\n' "$(basename "$f" .xz)" "$(echo "$(stat -c %s "$f") / 1048576" | bc -l)" "$(echo "$(xz -l --robot "$f" | awk '$1 == "totals" { print $5 }') / 1048576" | bc -l)" >&2; done
  [ $((part + tree)) -le $limit ] || { echo "k8s-bundle: .gpu/$p with the working tree exceeds 64 MiB: move a tool to another part" >&2; ok=0; }
done
[ $ok = 1 ] || exit 1

cat <<'CALLS'
Device calls, in order, kind nvidia-h200, on a tree holding the k8s and gpu branches. The
second must start within the machine's idle window after the first (/tmp/g and
the repository's bin/ and .cache survive only while it stays warm):
1. carry [".gpu/k8s1"], timeout_s 600 (expected ~4-5 min: unpack 10 s, setup 10 s, base 30 s, repack 25 s, lock 40 s, zstd build + sign 80 s):
   K8S=1 QUICK=1 bash hack/gpu/k8s-e2e.sh unpack setup build
2. carry [".gpu/k8s2"], timeout_s 600 (expected ~4-6 min: cluster 10-20 s, plugin < 10 s, verify through the Job cold ~70 s and warm ~45 s, drift ~45 s, containerd cold ~50 s and warm ~35 s, promote 2 s):
   K8S=1 bash hack/gpu/k8s-e2e.sh unpack cluster plugin verify
   (if it stops at a phase, repeat from that phase, e.g. `K8S=1 bash hack/gpu/k8s-e2e.sh plugin verify`, carry [])
$OUT comes back with k8s-e2e-*.log, e2e-setup.log, e2e-build.log, setup.tar.gz, build.tar.gz, k8s-verify.tar.gz.
CALLS

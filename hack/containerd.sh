#!/usr/bin/env bash
# Starts containerd (bin/containerd, its runc shim bin/containerd-shim-runc-v2,
# runc from the system) on a socket and root of its own under .cache/containerd,
# for verify's containerd runtime, and adds CONTAINERD_ADDRESS to .cache/env.
# Called by hack/up.sh after it wrote .cache/env; idempotent; hack/down.sh
# stops it by its recorded PID like the other services.
#   hack/containerd.sh          start (or keep) it
#   hack/containerd.sh status   exit 0 when it runs
# Only the CRI-less core runs (K8S=1 adds the CRI plugin, for hack/k8s.sh):
# no TCP listener (debug and metrics addresses stay empty), snapshotters
# that need special file systems off.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
cache=$root/.cache
dir=$cache/containerd
mkdir -p "$dir" "$cache/logs" "$cache/pids"

# alive, start: hack/lib.sh.
lib_prefix=up lib_pids=$cache/pids lib_log=$cache/logs/%s.log
. hack/lib.sh

sock=$dir/containerd.sock
if [ ${#sock} -gt 100 ]; then # unix socket paths are limited to 108 bytes
  sock=/tmp/imagectl-$(echo "$root" | sha256sum | cut -c1-12)/containerd.sock
fi

if [ "${1:-}" = status ]; then
  alive containerd || { echo "containerd: not running" >&2; exit 1; }
  exit 0
fi

for t in containerd containerd-shim-runc-v2; do
  [ -x "bin/$t" ] || { echo "containerd: bin/$t is missing: run make tools" >&2; exit 1; }
done
runc=$(command -v runc) || { echo "containerd: runc is missing: run make deps" >&2; exit 1; }

# k8s_cri CONFIG: appends the CRI plugin's settings for hack/k8s.sh's
# kubelet: CNI from Debian's plugins (/usr/lib/cni) with the config k8s.sh
# writes, the locally built pause image from the loopback registry, the
# private registry's CA (certs.d), and restrict_oom_score_adj (no
# CAP_SYS_RESOURCE here: else every sandbox fails to start).
k8s_cri() {
  # shellcheck disable=SC1091
  . "$cache/env"
  local certs=$dir/certs.d
  mkdir -p "$certs/$IMAGECTL_PRIVATE_REGISTRY" "${K8S_DIR:-$cache/k8s}/cni/net.d"
  printf 'server = "https://%s"\n\n[host."https://%s"]\n  ca = "%s"\n' "$IMAGECTL_PRIVATE_REGISTRY" "$IMAGECTL_PRIVATE_REGISTRY" "$IMAGECTL_PRIVATE_CA" \
    > "$certs/$IMAGECTL_PRIVATE_REGISTRY/hosts.toml"
  cat >> "$1" <<TOML

# cri on
[plugins.'io.containerd.grpc.v1.cri']
  disable_tcp_service = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = '$IMAGECTL_REGISTRY/imagectl/pause:local'
  [plugins.'io.containerd.cri.v1.images'.registry]
    config_path = "$certs"

[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "${K8S_DIR:-$cache/k8s}/cni/net.d"
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = "$runc"
TOML
}

if alive containerd && [ "${K8S:-}" = 1 ] && ! grep -q '^# cri on$' "$dir/config.toml"; then
  echo "up: containerd runs without its CRI plugin, K8S=1 needs it: run make down first" >&2
  exit 1
fi

# stargz-snapshotter (bin/containerd-stargz-grpc, hack/tools.sh stargz): the
# remote snapshotter that mounts eStargz layers lazily over FUSE, started
# before containerd, which reaches it as the proxy plugin "stargz". Only
# where /dev/fuse exists; `imagectl verify --snapshotter stargz` uses it.
stargz_sock=$(dirname "$sock")/stargz.sock
stargz=
if [ -x bin/containerd-stargz-grpc ] && [ -c /dev/fuse ]; then
  stargz=1
  if ! alive stargz; then
    mkdir -p "$dir/stargz"
    # Background fetch off: a lazy pull then fetches what is read (and the
    # prioritized files) only, which is what verify's startup measures.
    printf '# imagectl: hack/containerd.sh\nno_background_fetch = true\n' > "$dir/stargz.toml"
    [ -f "$dir/stargz.toml.local" ] && cat "$dir/stargz.toml.local" >> "$dir/stargz.toml"
    rm -f "$stargz_sock"
    start stargz bin/containerd-stargz-grpc --address "$stargz_sock" --root "$dir/stargz" --config "$dir/stargz.toml" --log-level warn
    for ((i = 0; i < 100; i++)); do [ -S "$stargz_sock" ] && break; sleep 0.1; done
    [ -S "$stargz_sock" ] || { echo "up: stargz-snapshotter did not create $stargz_sock within 10s" >&2; tail -n 20 "$cache/logs/stargz.log" >&2; exit 1; }
    echo "up: stargz-snapshotter ready at $stargz_sock" >&2
  fi
fi

if alive containerd && [ -n "$stargz" ] && ! grep -q '^\[proxy_plugins.stargz\]' "$dir/config.toml"; then
  echo "up: containerd runs without the stargz proxy plugin: run make down first" >&2
  exit 1
fi

if alive containerd; then
  echo "up: containerd already running (pid $(cut -d' ' -f1 "$cache/pids/containerd.pid"))" >&2
else
  mkdir -p "$(dirname "$sock")"
  rm -f "$sock"
  # K8S=1: the CRI plugin on, for the kubelet of hack/k8s.sh.
  cri_off='  "io.containerd.grpc.v1.cri",
  "io.containerd.cri.v1.images",
  "io.containerd.cri.v1.runtime",
  "io.containerd.podsandbox.controller.v1.podsandbox",'
  [ "${K8S:-}" = 1 ] && cri_off=
  cat > "$dir/config.toml" <<TOML
version = 3
root = "$dir/root"
state = "$dir/state"
disabled_plugins = [
$cri_off
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.blockfile",
  "io.containerd.snapshotter.v1.erofs",
  "io.containerd.nri.v1.nri",
  "io.containerd.tracing.processor.v1.otlp",
  "io.containerd.internal.v1.tracing",
]

[grpc]
  address = "$sock"

[ttrpc]
  address = ""

[debug]
  address = ""
  level = "info"

[metrics]
  address = ""
TOML
  [ "${K8S:-}" = 1 ] && k8s_cri "$dir/config.toml"
  if [ -n "$stargz" ]; then
    printf '\n[proxy_plugins.stargz]\n  type = "snapshot"\n  address = "%s"\n' "$stargz_sock" >> "$dir/config.toml"
  fi
  # The shim is found on PATH, and runc beside it.
  PATH="$root/bin:$(dirname "$runc"):$PATH" start containerd bin/containerd --config "$dir/config.toml"
  # Not wait_for: [ -S ] answers at once, before the forked child may have
  # become containerd (which alive checks); kill -0 only asks it is there.
  pid=$(cut -d' ' -f1 "$cache/pids/containerd.pid")
  for ((i = 0; i < 300; i++)); do
    [ -S "$sock" ] && break
    kill -0 "$pid" 2>/dev/null || { echo "up: containerd exited; last lines of .cache/logs/containerd.log:" >&2; tail -n 20 "$cache/logs/containerd.log" >&2; exit 1; }
    sleep 0.1
  done
  [ -S "$sock" ] || { echo "up: containerd did not create $sock within 30s" >&2; tail -n 20 "$cache/logs/containerd.log" >&2; exit 1; }
  echo "up: containerd ready at $sock" >&2
fi

if [ -f "$cache/env" ] && ! grep -q '^export CONTAINERD_ADDRESS=' "$cache/env"; then
  printf 'export CONTAINERD_ADDRESS=%q\n' "$sock" >> "$cache/env"
fi

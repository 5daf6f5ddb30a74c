#!/usr/bin/env bash
# Starts buildkitd, the distribution registry and the wheel index on
# loopback, pushes the local Debian base, and writes .cache/env (export
# lines). Idempotent: a service whose recorded PID is alive is left alone.
# hack/down.sh stops exactly the PIDs recorded in .cache/pids.
#
#   hack/up.sh               everything the tests use (make up, make test)
#   hack/up.sh demo          only what `make demo` uses: buildkitd, the
#                            registry, the wheel index, the private pair and
#                            the amd64 Debian base (no arm64 base under QEMU,
#                            no upstream bases or index stand-ins, no
#                            containerd or Kubernetes: verify runs on podman)
#   hack/up.sh status [demo] exit 0 when every service of that set runs
# A later `hack/up.sh` starts what a demo set-up left out.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
cache=$root/.cache
mkdir -p "$cache/logs" "$cache/pids" "$cache/buildkit" "$cache/registry" "$cache/wheels" "$root/bin"

# alive, start, wait_for, port_in_use: hack/lib.sh.
lib_prefix=up lib_pids=$cache/pids lib_log=$cache/logs/%s.log
. hack/lib.sh

status=
[ "${1:-}" = status ] && { status=1; shift; }
profile=full
case "${1:-}" in
  "") ;;
  demo) profile=demo ;;
  *) echo "usage: hack/up.sh [status] [demo]" >&2; exit 2 ;;
esac

# hack/up.sh status [demo]: exit 0 when every service of the set is running.
if [ -n "$status" ]; then
  services=(buildkitd registry wheelindex private-registry private-index)
  [ "$profile" = demo ] || services+=(upstream-registry torchindex pypiindex)
  for n in "${services[@]}"; do
    alive "$n" || { echo "up: $n is not running" >&2; exit 1; }
  done
  [ -f "$cache/env" ] || { echo "up: no .cache/env" >&2; exit 1; }
  [ "$profile" = demo ] && exit 0
  hack/containerd.sh status && grep -q '^export CONTAINERD_ADDRESS=' "$cache/env" || exit 1
  [ "${K8S:-}" != 1 ] || { hack/k8s.sh status && grep -q '^export IMAGECTL_KUBECONFIG=' "$cache/env"; } || exit 1
  exit 0
fi

for t in buildkitd buildctl registry crane; do
  [ -x "bin/$t" ] || { echo "up: bin/$t is missing: run make tools" >&2; exit 1; }
done
command -v runc >/dev/null || { echo "up: runc is missing: run make deps" >&2; exit 1; }

# pick_port NAME DEFAULT: the port used last time, else DEFAULT, else a free one.
pick_port() {
  local name=$1 p
  for p in $(cat "$cache/$name.port" 2>/dev/null) "$2" $(seq $(( $2 + 1 )) $(( $2 + 200 ))); do
    if ! port_in_use "$p"; then echo "$p"; return 0; fi
  done
  echo "up: no free port near $2 for $name" >&2
  return 1
}

http_ok() { curl -fsS -o /dev/null --max-time 2 "$1"; }

# start_registry NAME DIR PORT [YAML]: the distribution registry on
# 127.0.0.1:PORT, config DIR/config.yml, storage under DIR/data. YAML is
# appended right after http.addr: indented lines extend http (tls:), lines
# at column 0 add top-level sections (auth:).
start_registry() {
  local name=$1 dir=$2 port=$3 extra=${4:-}
  mkdir -p "$dir"
  {
    cat <<YAML
version: 0.1
log:
  level: info
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $dir/data
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$port
YAML
    [ -z "$extra" ] || printf '%s\n' "$extra"
  } > "$dir/config.yml"
  OTEL_TRACES_EXPORTER=none start "$name" bin/registry serve "$dir/config.yml"
}

. hack/private.sh # the htpasswd+TLS registry and the basic-auth+TLS wheel index; buildkitd trusts their CA

# --- buildkitd: OCI worker, runc from Debian, overlayfs, state under .cache/buildkit.
sock=$cache/buildkit/buildkitd.sock
if [ ${#sock} -gt 100 ]; then # unix socket paths are limited to 108 bytes
  sock=/tmp/imagectl-$(echo "$root" | sha256sum | cut -c1-12)/buildkitd.sock
  mkdir -p "$(dirname "$sock")"
fi
bkhost=unix://$sock
if alive buildkitd; then
  echo "up: buildkitd already running (pid $(cut -d' ' -f1 "$cache/pids/buildkitd.pid"))" >&2
else
  rm -f "$sock"
  SSL_CERT_FILE=$priv/ca-bundle.pem start buildkitd bin/buildkitd --config "$priv/buildkitd.toml" --root "$cache/buildkit/root" --addr "$bkhost" \
    --oci-worker=true --containerd-worker=false \
    --oci-worker-snapshotter=overlayfs --oci-worker-binary="$(command -v runc)"
  wait_for buildkitd 60 bin/buildctl --addr "$bkhost" debug workers
  echo "up: buildkitd ready at $bkhost" >&2
fi

# --- registry on 127.0.0.1, storage under .cache/registry.
if alive registry; then
  regport=$(cat "$cache/registry.port")
  echo "up: registry already running on 127.0.0.1:$regport" >&2
else
  regport=$(pick_port registry 5000)
  start_registry registry "$cache/registry" "$regport"
  echo "$regport" > "$cache/registry.port"
  wait_for registry 60 http_ok "http://127.0.0.1:$regport/v2/"
  echo "up: registry ready at 127.0.0.1:$regport" >&2
fi
registry=127.0.0.1:$regport

# --- wheel index: the demo wheels (cached), served on 127.0.0.1.
wheelindex=$root/bin/wheelindex
if [ ! -x "$wheelindex" ] || [ -n "$(find hack/wheelindex internal/wheelhouse -newer "$wheelindex" -name '*.go' | head -n1)" ]; then
  go build -o "$wheelindex" ./hack/wheelindex
fi
"$wheelindex" generate "$cache/wheels" --core-bytes "${IMAGECTL_DEMO_CORE_BYTES:-67108864}" --copy '/usr/share/python-wheels/pip-*-py3-none-any.whl'
if alive wheelindex; then
  echo "up: wheel index already running on 127.0.0.1:$(cat "$cache/wheelindex.port")" >&2
else
  wiport=$(pick_port wheelindex 8000)
  start wheelindex "$wheelindex" serve "$cache/wheels" --addr "127.0.0.1:$wiport"
  echo "$wiport" > "$cache/wheelindex.port"
  wait_for wheelindex 30 http_ok "http://127.0.0.1:$wiport/simple/demo-core/"
  echo "up: wheel index ready at http://127.0.0.1:$wiport/simple/" >&2
fi
wheel_index=http://127.0.0.1:$(cat "$cache/wheelindex.port")/simple/

# --- the local Debian base, pushed to the registry.
IMAGECTL_REGISTRY=$registry hack/base.sh
base=$registry/imagectl/debian-base:bookworm
if [ "$profile" = full ]; then
  hack/binfmt.sh && IMAGECTL_REGISTRY=$registry hack/base.sh arm64 # linux/arm64 under QEMU; debian-base:bookworm-multi
fi
mirror=$(hack/base.sh mirror)

# --- the upstream registry with the nvidia/cuda-shaped, python-less bases.
[ "$profile" = demo ] || . hack/upstream.sh

tmp=$cache/env.tmp
{
  echo "# written by hack/up.sh; source it: . .cache/env"
  printf 'export BUILDKIT_HOST=%q\n' "$bkhost"
  printf 'export IMAGECTL_REGISTRY=%q\n' "$registry"
  printf 'export IMAGECTL_WHEEL_INDEX=%q\n' "$wheel_index"
  printf 'export IMAGECTL_BASE=%q\n' "$base"
  printf 'export IMAGECTL_BASE_MULTI=%q\n' "$base-multi"
  printf 'export IMAGECTL_DEBIAN_MIRROR=%q\n' "$mirror"
  printf 'export IMAGECTL_VAR_registry=%q\n' "$registry"
  printf 'export IMAGECTL_VAR_wheel_index=%q\n' "$wheel_index"
  printf 'export IMAGECTL_WHEELS_DIR=%q\n' "$cache/wheels"
  # The demo set leaves out the upstream registry: an earlier full run's
  # env.d/upstream.env names one that is not running now.
  if [ "$profile" = demo ]; then cat "$cache/env.d/private.env"; else cat "$cache"/env.d/*.env 2>/dev/null || true; fi
} > "$tmp"
if [ "$profile" = demo ]; then
  mv "$tmp" "$cache/env"
else
  . hack/standins.sh # the pytorch spec's torch index and PyPI stand-ins; appends to $tmp
  mv "$tmp" "$cache/env"
  hack/containerd.sh # verify's containerd runtime; adds CONTAINERD_ADDRESS to .cache/env
  [ "${K8S:-}" != 1 ] || hack/k8s.sh # K8S=1: a local Kubernetes on that containerd; adds IMAGECTL_KUBECONFIG
fi
echo "up: wrote .cache/env" >&2
cat "$cache/env" >&2

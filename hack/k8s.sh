#!/usr/bin/env bash
# A real single-node Kubernetes on loopback, for verify's kubernetes runtime:
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler and the
# kubelet, all from bin/kube (one static binary built from the module proxy
# by hack/tools.sh k8s), the kubelet on the containerd hack/containerd.sh
# runs (its CRI plugin on: K8S=1), pods networked by Debian's
# containernetworking-plugins (a bridge with no address on the host: pods
# reach each other, nothing else) and sandboxes from a pause image built
# here (hack/pause) and pushed to the loopback registry.
#   hack/k8s.sh           start (or keep) it; adds IMAGECTL_KUBECONFIG to .cache/env
#   hack/k8s.sh status    exit 0 when every component runs
#   hack/k8s.sh down      stop it: kubelet, scheduler, controller-manager,
#                         apiserver, then etcd (the apiserver hangs on SIGTERM
#                         with etcd gone); unmount what the kubelet left
# Called by hack/up.sh (after containerd.sh) and hack/down.sh (first), when
# K8S=1. Everything lives under .cache/k8s; the node is named 127.0.0.1 and
# every listener binds 127.0.0.1. Certificates and kubeconfigs: hack/pki k8s.
#
# Parameters (environment; the defaults are the CI cluster's), for running
# the same cluster elsewhere, e.g. on a GPU host with a device plugin:
#   KUBE_BIN=PATH           the multi-call kube binary (default bin/kube)
#   K8S_DIR=DIR             state: etcd, kubelet root, pki, pids (default .cache/k8s)
#   K8S_NODE=NAME           the node's name (default 127.0.0.1)
#   K8S_NODE_IP=IP          the kubelet's --node-ip (default: none; the kubelet
#                           takes the node name when it is an IP)
#   K8S_KUBELET_ARGS="..."  extra kubelet flags, word-split, e.g.
#                           "--feature-gates=... --v=4"
#   K8S_KUBELET_CONFIG=FILE YAML appended to the KubeletConfiguration, e.g.
#                           cdi/device-plugin settings (fields not already set)
#   K8S_APISERVER_ARGS="..." extra kube-apiserver flags, word-split
# The kubelet always serves device plugins at
# /var/lib/kubelet/device-plugins/kubelet.sock (hardcoded in it): one
# cluster per host, or run each in its own mount namespace.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
cache=$root/.cache
dir=${K8S_DIR:-$cache/k8s}
pids=$dir/pids
node=${K8S_NODE:-127.0.0.1}
kube=$(readlink -f "${KUBE_BIN:-bin/kube}")
order=(etcd apiserver controller-manager scheduler kubelet)

# alive, start, wait_for, stop_recorded, port_in_use: hack/lib.sh.
lib_prefix=k8s lib_pids=$pids lib_log=$cache/logs/k8s-%s.log
. hack/lib.sh

# kstart NAME ARGS...: the kube binary's command NAME, as service NAME.
kstart() { start "$1" "$kube" "$@"; }

# The cgroup the kubelet puts every pod under (cgroupRoot), one per checkout.
cgroot=imagectl-k8s-$(echo "$root" | sha256sum | cut -c1-8)
# The pods' bridge: no address, so the host's routes never change.
bridge=imk8s$(echo "$root" | sha256sum | cut -c1-8)

case "${1:-}" in
status)
  for n in "${order[@]}"; do alive "$n" || { echo "k8s: $n is not running" >&2; exit 1; }; done
  exit 0
  ;;
down)
  for ((i = ${#order[@]} - 1; i >= 0; i--)); do stop_recorded "$pids/${order[$i]}.pid" "k8s ${order[$i]}" 15; done
  # Pods the kubelet had no time to tear down keep running under their
  # shims (containerd's k8s.io namespace on this checkout's socket) even
  # after containerd stops: end each such shim's processes, then the shim.
  sock=$( { grep -o "^export CONTAINERD_ADDRESS=.*" "$cache/env" 2>/dev/null || true; } | cut -d= -f2- | tr -d "'\"")
  if [ -n "$sock" ]; then
    for p in /proc/[0-9]*; do
      args=$( { tr '\0' ' ' < "$p/cmdline"; } 2>/dev/null) || continue
      case "${args%% *}" in *containerd-shim-runc-v2) ;; *) continue ;; esac
      case "$args " in *" -namespace k8s.io "*) ;; *) continue ;; esac
      case "$args " in *" -address $sock "*) ;; *) continue ;; esac
      shim=${p#/proc/}
      for c in $(cat /proc/"$shim"/task/*/children 2>/dev/null); do kill -KILL "$c" 2>/dev/null || true; done
      kill -TERM "$shim" 2>/dev/null || true
      echo "down: stopped a k8s pod's shim (pid $shim)" >&2
    done
  fi
  # The kubelet's volume mounts of pods it had no time to tear down.
  if command -v findmnt >/dev/null; then
    findmnt -rn -o TARGET | awk -v d="$dir/" 'index($0, d) == 1' | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
  fi
  if ip link show "$bridge" >/dev/null 2>&1; then ip link del "$bridge" || true; fi
  for h in /sys/fs/cgroup /sys/fs/cgroup/*; do
    [ -d "$h/$cgroot" ] && find "$h/$cgroot" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
  exit 0
  ;;
"") mkdir -p "$dir" "$pids" "$cache/logs" ;;
*) echo "usage: hack/k8s.sh [status|down]" >&2; exit 2 ;;
esac

[ -x "$kube" ] || { echo "k8s: $kube is missing: run hack/tools.sh k8s (or set KUBE_BIN)" >&2; exit 1; }
[ -x /usr/lib/cni/bridge ] || { echo "k8s: /usr/lib/cni/bridge is missing: run make deps" >&2; exit 1; }
[ -f "$cache/env" ] || { echo "k8s: no .cache/env: run hack/up.sh" >&2; exit 1; }
# shellcheck disable=SC1091
. "$cache/env"
sock=${CONTAINERD_ADDRESS:?k8s: .cache/env has no CONTAINERD_ADDRESS (hack/containerd.sh)}
grep -q '^# cri on$' "$cache/containerd/config.toml" 2>/dev/null ||
  { echo "k8s: containerd runs without its CRI plugin: hack/down.sh, then start with K8S=1" >&2; exit 1; }

# port NAME DEFAULT: the port used last time, else DEFAULT, else a free one near it.
port() {
  local p
  for p in $(cat "$dir/$1.port" 2>/dev/null) "$2" $(seq $(($2 + 1)) $(($2 + 200))); do
    if ! port_in_use "$p"; then echo "$p" > "$dir/$1.port"; echo "$p"; return 0; fi
  done
  echo "k8s: no free port near $2 for $1" >&2
  return 1
}

t0=$(date +%s%N)
pki=$dir/pki
if alive apiserver; then
  apiport=$(cat "$dir/apiserver.port")
else
  apiport=$(port apiserver 6443)
fi
server=https://127.0.0.1:$apiport
if [ ! -x bin/pki ] || [ -n "$(find hack/pki internal/atomicfile -newer bin/pki -name '*.go' | head -n1)" ]; then
  go build -o bin/pki ./hack/pki
fi
bin/pki k8s "$pki" --server "$server" --node "$node"
admin=$pki/admin.kubeconfig
curl_api() { curl -fsS --max-time 2 --cacert "$pki/ca.pem" --cert "$pki/admin.pem" --key "$pki/admin.key" "$server$1"; }

# --- the pause image, pushed to the loopback registry (the CRI plugin pulls it).
pause=$IMAGECTL_REGISTRY/imagectl/pause:local
if [ ! -x bin/pause ] || [ -n "$(find hack/pause -newer bin/pause -name '*.go' | head -n1)" ] || ! bin/crane digest --insecure "$pause" >/dev/null 2>&1; then
  CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o bin/pause ./hack/pause
  mkdir -p "$dir/pause"
  tar --owner=0 --group=0 --mtime=@0 -C bin -cf "$dir/pause/layer.tar" pause
  { bin/crane append --insecure --oci-empty-base -f "$dir/pause/layer.tar" -t "$pause" &&
    bin/crane mutate --insecure --set-platform "linux/$(go env GOARCH)" --entrypoint /pause -t "$pause" "$pause"; } > "$dir/pause/crane.log" 2>&1 ||
    { echo "k8s: pushing the pause image $pause failed:" >&2; cat "$dir/pause/crane.log" >&2; exit 1; }
fi
[ "$(grep -o "sandbox = '[^']*'" "$cache/containerd/config.toml")" = "sandbox = '$pause'" ] ||
  { echo "k8s: containerd's sandbox image is not $pause: hack/down.sh and start again" >&2; exit 1; }

# --- etcd
if ! alive etcd; then
  ec=$(port etcd 2379)
  ep=$(port etcd-peer $((ec + 1)))
  kstart etcd --name imagectl --data-dir "$dir/etcd" \
    --listen-client-urls "http://127.0.0.1:$ec" --advertise-client-urls "http://127.0.0.1:$ec" \
    --listen-peer-urls "http://127.0.0.1:$ep" --initial-advertise-peer-urls "http://127.0.0.1:$ep" \
    --initial-cluster "imagectl=http://127.0.0.1:$ep" --unsafe-no-fsync --log-level warn
fi
ec=$(cat "$dir/etcd.port")
wait_for etcd 30 curl -fsS --max-time 1 "http://127.0.0.1:$ec/health"

# --- kube-apiserver
if ! alive apiserver; then
  kstart apiserver --etcd-servers "http://127.0.0.1:$ec" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$apiport" --endpoint-reconciler-type none \
    --cert-dir "$dir/apiserver" --tls-cert-file "$pki/apiserver.pem" --tls-private-key-file "$pki/apiserver.key" \
    --client-ca-file "$pki/ca.pem" --authorization-mode Node,RBAC \
    --kubelet-client-certificate "$pki/apiserver-kubelet-client.pem" --kubelet-client-key "$pki/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority "$pki/ca.pem" --kubelet-preferred-address-types InternalIP \
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
    --service-account-issuer https://kubernetes.default.svc --service-cluster-ip-range 10.96.0.0/24 \
    --enable-priority-and-fairness=false --profiling=false --v=1 ${K8S_APISERVER_ARGS:-}
fi
wait_for apiserver 90 curl_api /readyz

# --- kube-controller-manager and kube-scheduler (no listener of their own: --secure-port 0)
if ! alive controller-manager; then
  kstart controller-manager --kubeconfig "$pki/controller-manager.kubeconfig" --secure-port 0 --leader-elect=false \
    --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.pem" --use-service-account-credentials=true \
    --profiling=false --v=1
fi
if ! alive scheduler; then
  kstart scheduler --kubeconfig "$pki/scheduler.kubeconfig" --secure-port 0 --leader-elect=false --profiling=false --v=1
fi

# --- CNI: a bridge with no address on the host; pods get 10.244.0.0/24.
cni=$dir/cni
mkdir -p "$cni/net.d"
cat > "$cni/net.d/10-imagectl.conflist" <<JSON
{
  "cniVersion": "1.0.0",
  "name": "imagectl-k8s",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$bridge",
      "isGateway": false,
      "ipMasq": false,
      "hairpinMode": false,
      "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.244.0.0/24"}]], "dataDir": "$cni/ipam"}
    }
  ]
}
JSON

# --- the kubelet's cgroup root, made in every hierarchy (cgroup v1 hybrid
# machines) or the unified one (cgroup v2), cpuset copied from the parent.
if [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then
  mkdir -p "/sys/fs/cgroup/$cgroot"
  v1=false
else
  for h in /sys/fs/cgroup/*; do
    [ -d "$h" ] && [ "$(basename "$h")" != unified ] || continue
    mkdir -p "$h/$cgroot"
    if [ -f "$h/cpuset.cpus" ]; then
      cat "$h/cpuset.cpus" > "$h/$cgroot/cpuset.cpus"
      cat "$h/cpuset.mems" > "$h/$cgroot/cpuset.mems"
    fi
  done
  v1=true
fi

# --- the kubelet
if ! alive kubelet; then
  kport=$(port kubelet 10250)
  mkdir -p "$dir/kubelet"
  cat > "$dir/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: $kport
readOnlyPort: 0
healthzPort: 0
containerRuntimeEndpoint: unix://$sock
tlsCertFile: $pki/kubelet.pem
tlsPrivateKeyFile: $pki/kubelet.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $pki/ca.pem}
authorization: {mode: Webhook}
cgroupDriver: cgroupfs
cgroupRoot: /$cgroot
failCgroupV1: $( [ "$v1" = true ] && echo false || echo true )
failSwapOn: false
resolvConf: ""
serializeImagePulls: false
maxPods: 32
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 50Mi, nodefs.available: 1Gi, imagefs.available: 1Gi, nodefs.inodesFree: 1%}
nodeStatusReportFrequency: 10s
podLogsDir: $dir/pod-logs
YAML
  if [ -n "${K8S_KUBELET_CONFIG:-}" ]; then
    cat "$K8S_KUBELET_CONFIG" >> "$dir/kubelet.yaml" || { echo "k8s: K8S_KUBELET_CONFIG=$K8S_KUBELET_CONFIG cannot be read" >&2; exit 1; }
  fi
  # shellcheck disable=SC2086
  kstart kubelet --config "$dir/kubelet.yaml" --kubeconfig "$pki/kubelet.kubeconfig" \
    --hostname-override "$node" ${K8S_NODE_IP:+--node-ip "$K8S_NODE_IP"} --root-dir "$dir/kubelet" --v=1 ${K8S_KUBELET_ARGS:-}
fi
node_ready() {
  curl_api "/api/v1/nodes/$node" | grep -q '"type": *"Ready", *"status": *"True"' ||
    curl_api "/api/v1/nodes/$node" | tr -d ' \n' | grep -q '"type":"Ready","status":"True"'
}
wait_for kubelet 120 node_ready
# The default ServiceAccount, which the admission of every pod waits for.
wait_for controller-manager 60 curl_api /api/v1/namespaces/default/serviceaccounts/default
alive scheduler || { echo "k8s: scheduler exited; last lines of .cache/logs/k8s-scheduler.log:" >&2; tail -n 20 "$cache/logs/k8s-scheduler.log" >&2; exit 1; }

if ! grep -q '^export IMAGECTL_KUBECONFIG=' "$cache/env"; then
  printf 'export IMAGECTL_KUBECONFIG=%q\n' "$admin" >> "$cache/env"
fi
echo "up: kubernetes ready at $server (node $node) in $(( ($(date +%s%N) - t0) / 1000000 )) ms; kubeconfig $admin" >&2

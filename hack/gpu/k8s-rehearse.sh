#!/usr/bin/env bash
# Rehearses hack/gpu/k8s-e2e.sh's GPU-less part on the Go machine, so that
# device minutes are not spent on typos: in a fresh directory holding only
# the tree (`git archive HEAD`) and the carried parts (.gpu/k8s1, .gpu/k8s2,
# ... from hack/gpu/k8s-bundle.sh), in a mount namespace of its own (a private
# /var/lib/kubelet, whose device-plugins socket path the kubelet hardcodes,
# and an empty /usr/lib/cni that only the unpacked plugins fill):
#   unpack    -> bin/ and /usr/lib/cni from the parts, sha256 checked
#   registry  -> gputool registry on a free loopback port
#   containerd (K8S=1, CRI on) from the unpacked binaries
#   cluster   -> hack/k8s.sh up, through hack/gpu/curl.py (CURL_SHIM=1),
#                the storage claim Bound
#   a pod     -> mounting that claim, running the pause image: Running
#   plugin    -> must fail fast here (no NVML): the device plugin's flags
#                parse and it names why it stopped
#   down
# Prints PASS/FAIL per step; exit 0 only when every step is as expected.
#   hack/gpu/k8s-rehearse.sh [DIR]   (default /tmp/gpu-rehearse; removed first)
set -euo pipefail
cd "$(dirname "$0")/../.."
src=$PWD
top=${1:-/tmp/gpu-rehearse}
[ -d .gpu/k8s1 ] || { echo "rehearse: .gpu/k8s1 is missing: run hack/gpu/k8s-bundle.sh" >&2; exit 1; }
rm -rf "$top" && mkdir -p "$top/repo" "$top/varlib-kubelet" "$top/cni" "$top/out"
git archive HEAD | tar -C "$top/repo" -xf -
mkdir -p "$top/repo/.gpu" && cp -r .gpu/k8s[0-9]* "$top/repo/.gpu/"
echo "rehearse: fresh tree $(git rev-parse --short HEAD) in $top/repo" >&2
# The inner script is a file: a child reading stdin must not eat it.
cat > "$top/inner.sh" <<'INNER'
set -u
top=$1
cd "$top/repo"
mount --bind "$top/varlib-kubelet" /var/lib/kubelet 2>/dev/null || { mkdir -p /var/lib/kubelet && mount --bind "$top/varlib-kubelet" /var/lib/kubelet; }
mount --bind "$top/cni" /usr/lib/cni 2>/dev/null || { mkdir -p /usr/lib/cni && mount --bind "$top/cni" /usr/lib/cni; }
export OUT=$top/out
fails=0
check() { # NAME CMD...: run, PASS when it exits 0
  local n=$1; shift
  if "$@"; then echo "PASS $n"; else echo "FAIL $n (rc=$?)"; fails=$((fails + 1)); fi
}
free_port() { local p; for p in $(seq "$1" $(($1 + 200))); do (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null || { echo $p; return; }; done; }
mkdir -p .cache
port=$(free_port 5300)
cat > .cache/env <<ENV
export IMAGECTL_REGISTRY=127.0.0.1:$port
export IMAGECTL_PRIVATE_REGISTRY=127.0.0.1:5443
export IMAGECTL_PRIVATE_CA=$top/no-private-registry-ca.pem
ENV
check unpack bash hack/gpu/k8s-e2e.sh unpack
check unpacked-cni test -x /usr/lib/cni/bridge -a -x /usr/lib/cni/host-local -a -x /usr/lib/cni/loopback
setsid bin/gputool registry --addr 127.0.0.1:$port --dir "$top/registry" > "$top/registry.log" 2>&1 < /dev/null &
reg=$!
export PATH=$PWD/bin:$PATH
check containerd env K8S=1 hack/containerd.sh
check cluster env K8S=1 CURL_SHIM=1 bash hack/gpu/k8s-e2e.sh cluster
pki=.cache/k8s/pki api=https://127.0.0.1:$(cat .cache/k8s/apiserver.port 2>/dev/null)
c() { python3 hack/gpu/curl.py -fsS --max-time 5 --cacert $pki/ca.pem --cert $pki/admin.pem --key $pki/admin.key "$@"; }
cat > "$top/pod.json" <<JSON
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"rehearse","namespace":"default"},
 "spec":{"restartPolicy":"Never","automountServiceAccountToken":false,
  "containers":[{"name":"p","image":"$(. .cache/env; echo "$IMAGECTL_REGISTRY")/imagectl/pause:local","imagePullPolicy":"IfNotPresent",
   "volumeMounts":[{"name":"s","mountPath":"/storage"}]}],
  "volumes":[{"name":"s","persistentVolumeClaim":{"claimName":"imagectl-verify-storage"}}]}}
JSON
pod_running() {
  c -X POST -H 'Content-Type: application/json' --data-binary "@$top/pod.json" "$api/api/v1/namespaces/default/pods" > /dev/null || return 1
  local i ph
  for ((i = 0; i < 600; i++)); do
    ph=$(c "$api/api/v1/namespaces/default/pods/rehearse" | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"].get("phase", ""))')
    [ "$ph" = Running ] && { echo "pod rehearse Running after $((i / 10)) s, storage claim mounted"; return 0; }
    sleep 0.1
  done
  echo "pod phase: $ph"; c "$api/api/v1/namespaces/default/events" | tail -c 3000; return 1
}
check pod-with-claim pod_running
c -X DELETE "$api/api/v1/namespaces/default/pods/rehearse" > /dev/null 2>&1
plugin_fails_fast() { ! timeout 60 bash hack/gpu/k8s-e2e.sh plugin && grep -q 'FAILED: the device plugin exited' "$OUT/k8s-e2e-plugin.log"; }
check plugin-fails-fast-without-nvml plugin_fails_fast
check down bash hack/gpu/k8s-e2e.sh down
kill "$(cut -d' ' -f1 .cache/pids/containerd.pid)" "$reg" 2>/dev/null
sleep 1
echo "rehearse: $fails failed; logs in $top/out and $top/repo/.cache/logs"
[ $fails = 0 ]
INNER
exec unshare --mount --propagation private bash "$top/inner.sh" "$top" < /dev/null

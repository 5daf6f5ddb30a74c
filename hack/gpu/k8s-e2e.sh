#!/usr/bin/env bash
# Issue 24's GPU node: the torch image verified through a real Kubernetes Job
# on the H200 (device kind nvidia-h200), driven by imagectl. Run from the
# repository root on the device machine, in calls of at most 600 s each,
# carrying the parts hack/gpu/k8s-bundle.sh wrote (it prints the exact calls),
# e.g. with two parts:
#
#   K8S=1 QUICK=1 bash hack/gpu/k8s-e2e.sh unpack setup build   # carry .gpu/k8s1
#   K8S=1 bash hack/gpu/k8s-e2e.sh unpack cluster plugin verify compare # carry .gpu/k8s2
#
# Phases (each prints `=== phase` and stops the run at its first failure,
# with the log lines that explain it):
#   unpack   every carried .gpu/k8s*/*.xz into bin/ (cni-* into /usr/lib/cni,
#            where hack/containerd.sh's CRI looks), checked against its
#            .sha256; .cache/env for the loopback registry if none yet
#   setup, build
#            hack/gpu/e2e.sh's phases (registry, buildkitd, containerd + CDI
#            spec, keys; lock, zstd build, push, sign); with K8S=1 its
#            containerd (hack/containerd.sh) runs with the CRI plugin on
#   cluster  hack/k8s.sh: etcd, apiserver, controller-manager, scheduler and
#            the kubelet (bin/kube) on that containerd; the pause image is
#            pushed here first (no Go toolchain on the GPU machine); the
#            Job's storage claim, bound to a hostPath volume in /tmp/g
#   plugin   NVIDIA's device plugin (bin/nvidia-device-plugin, CDI mode:
#            --device-list-strategy $DP_STRATEGY, default cdi-cri; it writes
#            its own CDI spec to /var/run/cdi, which containerd's CRI reads),
#            then waits until the node advertises nvidia.com/gpu
#   verify   imagectl verify REF --runtime kubernetes: cold (first pull by
#            the kubelet) and signed, then warm; the NCCL-drift lock through
#            the Job (want exit 4); promote --require-container-runtime,
#            which must accept the Job's (kubelet imageID) proof
#   compare  the containerd runtime cold and warm on the same image,
#            unsigned; the table of times
#   down     the device plugin, then hack/k8s.sh down
# CURL_SHIM=1 uses hack/gpu/curl.py even where curl exists (the rehearsal,
# hack/gpu/k8s-rehearse.sh, tests it that way).
#
# Writes $OUT/k8s-e2e-<phases>.log (everything printed) and, once a cluster
# exists, $OUT/k8s-verify.tar.gz (results, stderr, times, component logs,
# the CDI specs), also when a phase fails. Each imagectl verify is bounded
# (VERIFY_LIMIT, 150 s; 200 s the cold one) so that the call keeps time for
# its logs.
# State lives in /tmp/g (shared with e2e.sh: its build's ref and lock) and
# the repository's .cache, so a later call finds it while the machine is warm.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh" # repo G B OUT PY REG NAME; step, timed, show_result
DP_STRATEGY=${DP_STRATEGY:-cdi-cri}
export K8S=${K8S:-1}
export PATH=$B:$PATH PYTHONUNBUFFERED=1 IMAGECTL_SIGNING_PASSWORD=gpu-run
mkdir -p "$OUT" "$G"
exec > >(tee -a "$OUT/k8s-e2e-$(echo "$*" | tr ' ' '-').log") 2>&1
TIMES=$G/k8s-times.tsv
die() { echo "FAILED: $*"; exit 1; }

phase_unpack() {
  step "unpack the carried parts into bin/ and /usr/lib/cni"
  # Each call carries one part; those of earlier calls may still be here.
  local d f n dst found=0
  mkdir -p "$B" /usr/lib/cni
  for d in .gpu/k8s*/; do
    [ -d "$d" ] || continue
    for f in "$d"*.xz; do
      [ -f "$f" ] || continue
      found=1
      n=$(basename "$f" .xz)
      case $n in
        cni-*) dst=/usr/lib/cni/${n#cni-} ;;
        *) dst=$B/$n ;;
      esac
      if [ -f "$dst" ] && [ "$(sha256sum < "$dst")" = "$(cat "${f%.xz}.sha256")" ]; then
        printf '%-28s %10d bytes, unchanged: %s\n' "$n" "$(stat -c %s "$dst")" "$dst"
        continue
      fi
      xz -dc "$f" > "$dst.tmp" || die "xz -d $f"
      [ "$(sha256sum < "$dst.tmp")" = "$(cat "${f%.xz}.sha256")" ] || die "$f: sha256 differs from ${f%.xz}.sha256 (a part from another bundle?)"
      chmod +x "$dst.tmp" && mv "$dst.tmp" "$dst"
      printf '%-28s %10d bytes -> %s\n' "$n" "$(stat -c %s "$dst")" "$dst"
    done
  done
  [ $found = 1 ] || die "no .gpu/k8s*/*.xz carried (hack/gpu/k8s-bundle.sh writes them; the call's carry names one)"
  # The loopback registry e2e.sh starts, which hack/containerd.sh's CRI
  # pins the pause image to. No private registry runs here: its variables
  # only name a certs.d entry (hosts.toml) that nothing asks for.
  mkdir -p .cache
  if [ ! -s .cache/env ]; then
    cat > .cache/env <<ENV
export IMAGECTL_REGISTRY=$REG
export IMAGECTL_PRIVATE_REGISTRY=127.0.0.1:5443
export IMAGECTL_PRIVATE_CA=$G/no-private-registry-ca.pem
ENV
  fi
  cat .cache/env
}

phase_e2e() { # setup|build: hack/gpu/e2e.sh's phase of that name
  step "hack/gpu/e2e.sh $1 (K8S=$K8S QUICK=${QUICK:-})"
  bash "$here/e2e.sh" "$1" || die "e2e.sh $1"
}

# curl_api PATH [CURL ARGS]: a call to the apiserver as the cluster's admin.
curl_api() {
  local pki=.cache/k8s/pki p=$1
  shift
  curl -fsS --max-time 5 --cacert $pki/ca.pem --cert $pki/admin.pem --key $pki/admin.key "$@" "https://127.0.0.1:$(cat .cache/k8s/apiserver.port)$p"
}
# create PATH JSON: POST an object unless it exists (409 is no error here).
create() {
  local f=$G/create.json out
  printf '%s' "$2" > "$f"
  out=$(curl_api "$1" -X POST -H 'Content-Type: application/json' --data-binary "@$f" 2>&1) && return 0
  case $out in *409*) return 0 ;; esac
  echo "$out"
  return 1
}

phase_cluster() {
  step "cluster: etcd, control plane and kubelet from bin/kube on containerd's CRI"
  [ -f hack/k8s.sh ] || die "hack/k8s.sh is missing: this tree lacks the k8s branch (issue 24)"
  local t
  for t in kube pki pause crane containerd; do [ -x "$B/$t" ] || die "bin/$t is missing: not in the carried parts"; done
  for t in bridge host-local loopback; do [ -x /usr/lib/cni/$t ] || die "/usr/lib/cni/$t is missing: not in the carried parts"; done
  # hack/k8s.sh rebuilds bin/pki and bin/pause with go when their sources
  # are newer; there is no go here: the carried ones are current.
  touch "$B/pki" "$B/pause"
  . .cache/env
  grep -q '^# cri on$' .cache/containerd/config.toml 2>/dev/null || die "containerd runs without its CRI plugin (start setup with K8S=1)"
  local pause=$IMAGECTL_REGISTRY/imagectl/pause:local arch
  if ! crane digest --insecure "$pause" >/dev/null 2>&1; then
    arch=$(uname -m); arch=${arch/x86_64/amd64}; arch=${arch/aarch64/arm64}
    mkdir -p "$G/pause"
    tar --owner=0 --group=0 --mtime=@0 -C "$B" -cf "$G/pause/layer.tar" pause
    crane append --insecure --oci-empty-base -f "$G/pause/layer.tar" -t "$pause" &&
      crane mutate --insecure --set-platform "linux/$arch" --entrypoint /pause -t "$pause" "$pause" || die "pushing the pause image $pause"
  fi
  timed cluster-up hack/k8s.sh || { tail -n 30 .cache/logs/containerd.log; die "hack/k8s.sh"; }
  # The verify Job's storage (the lock's runtime.storage: /storage, which
  # the init waits for as a mount holding .ready): a claim bound to a
  # hostPath volume, as a node-local cache disk would be.
  mkdir -p $G/k8s-storage && touch $G/k8s-storage/.ready
  create /api/v1/persistentvolumes '{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"imagectl-verify-storage"},
    "spec":{"capacity":{"storage":"100Gi"},"accessModes":["ReadWriteOnce"],"persistentVolumeReclaimPolicy":"Retain","storageClassName":"",
    "claimRef":{"namespace":"default","name":"imagectl-verify-storage"},"hostPath":{"path":"'$G/k8s-storage'","type":"Directory"}}}' || die "creating the storage PersistentVolume"
  create /api/v1/namespaces/default/persistentvolumeclaims '{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"imagectl-verify-storage","namespace":"default"},
    "spec":{"accessModes":["ReadWriteOnce"],"storageClassName":"","volumeName":"imagectl-verify-storage","resources":{"requests":{"storage":"100Gi"}}}}' || die "creating the storage PersistentVolumeClaim"
  local i phase=
  for ((i = 0; i < 300; i++)); do
    phase=$(curl_api /api/v1/namespaces/default/persistentvolumeclaims/imagectl-verify-storage 2>/dev/null | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["status"].get("phase", ""))' 2>/dev/null)
    [ "$phase" = Bound ] && break
    sleep 0.1
  done
  [ "$phase" = Bound ] || die "the storage claim is ${phase:-unknown}, not Bound, after 30 s (controller-manager log: .cache/logs/k8s-controller-manager.log)"
  echo "storage: claim imagectl-verify-storage Bound to hostPath $G/k8s-storage"
  curl_api "/api/v1/nodes/127.0.0.1" | "$PY" -c '
import json, sys
n = json.load(sys.stdin)
print("node", n["metadata"]["name"], "kubelet", n["status"]["nodeInfo"]["kubeletVersion"], "runtime", n["status"]["nodeInfo"]["containerRuntimeVersion"])
print("allocatable", json.dumps(n["status"]["allocatable"], sort_keys=True))
for c in n["status"]["conditions"]:
    print("  %-16s %s %s" % (c["type"], c["status"], c.get("message", "")[:100]))'
}

phase_plugin() {
  step "NVIDIA device plugin, CDI mode ($DP_STRATEGY)"
  [ -x "$B/nvidia-device-plugin" ] || die "bin/nvidia-device-plugin is missing: not in the carried parts"
  [ -x "$B/nvidia-cdi-hook" ] || die "bin/nvidia-cdi-hook is missing: not in the carried parts"
  [ -S /var/lib/kubelet/device-plugins/kubelet.sock ] || die "no /var/lib/kubelet/device-plugins/kubelet.sock: the kubelet's device manager is not serving"
  "$B/nvidia-device-plugin" --version 2>&1 | head -n 3
  local pidf=$G/device-plugin.pid i alloc
  if [ -f "$pidf" ] && kill -0 "$(cat "$pidf")" 2>/dev/null; then
    echo "device plugin already running (pid $(cat "$pidf"))"
  else
    # The plugin runs on the host, not in its DaemonSet's container: the
    # driver root it reads and the one the containers get are both /; the
    # CDI hook is the carried one (the spec's default /usr/bin/nvidia-cdi-hook
    # is absent here).
    setsid "$B/nvidia-device-plugin" --device-list-strategy="$DP_STRATEGY" --device-id-strategy=uuid \
      --device-discovery-strategy=nvml --driver-root=/ --driver-root-ctr-path=/ \
      --nvidia-cdi-hook-path="$B/nvidia-cdi-hook" --fail-on-init-error=true \
      > "$G/device-plugin.log" 2>&1 < /dev/null &
    echo $! > "$pidf"
  fi
  for ((i = 0; i < 600; i++)); do
    alloc=$(curl_api "/api/v1/nodes/127.0.0.1" 2>/dev/null | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["status"].get("allocatable", {}).get("nvidia.com/gpu", ""))' 2>/dev/null)
    [ -n "$alloc" ] && [ "$alloc" != 0 ] && break
    kill -0 "$(cat "$pidf")" 2>/dev/null || { tail -n 40 "$G/device-plugin.log"; die "the device plugin exited"; }
    sleep 0.1
  done
  tail -n 15 "$G/device-plugin.log"
  [ -n "$alloc" ] && [ "$alloc" != 0 ] || die "the node does not advertise nvidia.com/gpu within 60 s (kubelet log: .cache/logs/k8s-kubelet.log)"
  echo "node 127.0.0.1 allocatable nvidia.com/gpu: $alloc ($(( i / 10 )).$(( i % 10 )) s after the plugin started)"
  ls -l /var/run/cdi/ /etc/cdi/ 2>&1
  nvidia-ctk cdi list 2>&1 | head -n 12
}

# verify_rt TAG RUNTIME LOCK [flags]: verify the zstd image, print the result.
verify_rt() {
  local tag=$1 rt=$2 lock=$3 rc
  shift 3
  local extra=()
  case $rt in
    kubernetes) extra=(--kubeconfig "$repo/.cache/k8s/pki/admin.kubeconfig" --namespace default --storage-claim imagectl-verify-storage) ;;
    containerd) extra=(--storage "$G/storage") ;;
  esac
  # A bound below the lock's verify.timeout (10m), so that a stuck Job
  # (Pending, a pull that hangs) leaves time in the 600 s call for the logs;
  # SIGINT is imagectl's Ctrl-C: it deletes what it created.
  timed "verify-$tag" timeout -s INT -k 30 "${VERIFY_LIMIT:-150}" imagectl verify "$REF" --lock "$lock" --runtime "$rt" "${extra[@]}" -o json "$@" \
    > "$W/verify-$tag.json" 2> "$W/verify-$tag.stderr"
  rc=$?
  grep -E 'runtime|pulled|pod|job|Job|node|imageID|probe container|signed|not signing|verification|error' "$W/verify-$tag.stderr" | cut -c1-400 | tail -n 25
  show_result "$W/verify-$tag.json"
  return $rc
}

phase_verify() {
  W=$G/run/k8s; mkdir -p "$W"
  LOCK=$G/images/$NAME/lock.json
  [ -f "$LOCK" ] && [ -f $G/run/build/build-zstd.ref ] || die "no build: run the setup and build phases first (same warm machine)"
  REF=$(cat $G/run/build/build-zstd.ref)
  local rc

  step "kubernetes, cold (the kubelet pulls the image), signed with the verifier key"
  VERIFY_LIMIT=200 verify_rt k8s-cold kubernetes "$LOCK" --sign --key $G/keys/verifier/cosign.key; rc=$?
  echo "k8s cold: rc=$rc (want 0)"
  if [ $rc != 0 ]; then
    curl_api "/api/v1/namespaces/default/events" | "$PY" -c '
import json, sys
for e in json.load(sys.stdin)["items"][-25:]:
    print(e.get("lastTimestamp"), e["involvedObject"]["kind"], e["involvedObject"]["name"], e["reason"], e["message"][:300])'
    tail -n 30 .cache/logs/k8s-kubelet.log
    die "the Kubernetes verify failed (rc=$rc)"
  fi

  step "kubernetes, warm (image already on the node)"
  verify_rt k8s-warm kubernetes "$LOCK"; echo "k8s warm: rc=$? (want 0)"

  step "negative through the Job: the same image against a lock whose NCCL differs (want exit 4, both versions named)"
  gputool drift "$LOCK" "$W/drift" || die "gputool drift"
  verify_rt k8s-drift-nccl kubernetes "$W/drift/nccl.lock.json"; rc=$?
  echo "k8s drift nccl: rc=$rc (want 4)"

  step "promote --require-container-runtime: the gate must accept the Job's proof (the only signed verification)"
  local rel=$G/images/$NAME/releases.json
  rm -f "$rel"
  gputool record "$rel" $NAME $REG/gpu/$NAME "$REF" $NAME-2026.12 2026-12 "$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["digest"])' "$LOCK")" $NAME
  timed promote imagectl promote "$rel" --confirm --key $G/keys/signer/cosign.pub --verifier-key $G/keys/verifier/cosign.pub \
    --require-container-runtime > "$W/promote.txt" 2>&1
  echo "promote: rc=$? (want 0)"; cat "$W/promote.txt"
}

# phase_compare: the containerd runtime on the same image, for the times.
phase_compare() {
  W=$G/run/k8s; mkdir -p "$W"
  LOCK=$G/images/$NAME/lock.json
  REF=$(cat $G/run/build/build-zstd.ref 2>/dev/null) || die "no build: run the setup and build phases first (same warm machine)"
  mkdir -p $G/storage && touch $G/storage/.ready
  step "containerd runtime on the same image, cold (unpacked into its own namespace; the layers the kubelet fetched are shared) then warm, unsigned"
  verify_rt ctr-cold containerd "$LOCK"; echo "containerd cold: rc=$? (want 0)"
  verify_rt ctr-warm containerd "$LOCK"; echo "containerd warm: rc=$? (want 0)"
  step "times (seconds from imagectl verify to its result)"
  column -t "$TIMES" 2>/dev/null || cat "$TIMES"
}

# save: what the cluster phases leave, into $OUT/k8s-verify.tar.gz (on
# every exit, a failed one included).
save() {
  [ -d .cache/k8s ] || return 0
  W=$G/run/k8s; mkdir -p "$W/logs"
  cp "$TIMES" "$G/device-plugin.log" /var/run/cdi/*.json /etc/cdi/nvidia.yaml .cache/containerd/config.toml .cache/k8s/kubelet.yaml "$W/" 2>/dev/null
  for f in .cache/logs/k8s-*.log .cache/logs/containerd.log; do [ -f "$f" ] && tail -n 400 "$f" > "$W/logs/$(basename "$f")"; done
  tar -C "$W" -czf "$OUT/k8s-verify.tar.gz" . 2>/dev/null
}

phase_down() {
  step down
  local pidf=$G/device-plugin.pid
  if [ -f "$pidf" ] && kill -0 "$(cat "$pidf")" 2>/dev/null; then kill "$(cat "$pidf")"; fi
  rm -f "$pidf"
  [ -f hack/k8s.sh ] && hack/k8s.sh down
}

if ! command -v curl >/dev/null || [ -n "${CURL_SHIM:-}" ]; then
  # hack/k8s.sh and curl_api call curl, which this machine may lack.
  mkdir -p "$G/shim" && printf '#!/bin/sh\nexec %s %s "$@"\n' "$PY" "$here/curl.py" > "$G/shim/curl" && chmod +x "$G/shim/curl"
  export PATH=$G/shim:$PATH
  echo "curl: hack/gpu/curl.py"
fi
trap save EXIT
for p in "$@"; do
  case $p in
    unpack) phase_unpack ;;
    setup | build) phase_e2e "$p" ;;
    cluster) phase_cluster ;;
    plugin) phase_plugin ;;
    verify) phase_verify ;;
    compare) phase_compare ;;
    down) phase_down ;;
    *) die "unknown phase $p (unpack setup build cluster plugin verify compare down)" ;;
  esac
done
step done

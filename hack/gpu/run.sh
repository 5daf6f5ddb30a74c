#!/usr/bin/env bash
# The verify stage's GPU run (device machine, kind nvidia-h200-x2).
# Expects, carried in .gpu/: imagectl, gputool (gputool mklock), verify-gpu.test; and
# bin/imagectl-init (make bin/imagectl-init). Writes everything under
# $OUT (run.log plus gpu-run.tar.gz holding each output file).
set -u
OUT=${OUT:-/tmp/gpu-out}
W=/tmp/gpu-run
rm -rf "$W" && mkdir -p "$W" "$OUT"
export PYTHONUNBUFFERED=1
exec > >(tee "$OUT/run.log") 2>&1
step() { echo; echo "=== $* ($(date -u +%H:%M:%S))"; }

step machine
date -u; uname -a; nvidia-smi -L; nvidia-smi --query-gpu=driver_version,name,memory.total --format=csv
nvidia-smi topo -m > "$W/nvidia-smi-topo.txt" 2>&1; cat "$W/nvidia-smi-topo.txt"
PY=$(command -v python3); echo "python: $PY"
"$PY" -c 'import sys,torch; print(sys.version.split()[0], torch.__version__, torch.version.cuda, torch.backends.cudnn.version(), torch.cuda.nccl.version(), torch.cuda.device_count())'
env | grep -E '^(NCCL|TORCH|NVSHMEM)_' | sort

step init-check
if [ -f hack/gpu/init-check.sh ] && [ -x bin/imagectl-init ]; then
  bash hack/gpu/init-check.sh > "$W/init-check.txt" 2>&1; echo "init-check rc=$?"; cat "$W/init-check.txt"
else
  echo "init-check: hack/gpu/init-check.sh or bin/imagectl-init missing; skipped"
fi

step locks
mkdir -p "$W/locks"
if [ -n "${USE_LOCKS:-}" ]; then cp "$USE_LOCKS"/*.lock.json "$W/locks/"; else .gpu/gputool mklock -python "$PY" -out "$W/locks"; fi
ls -l "$W/locks"
PASS="$W/locks/h200-torch2.11-cu130.lock.json"; OLD="$W/locks/torch2.6-cu124.lock.json"
IMG="localhost/gpu-machine-env@sha256:$(sha256sum "$PASS" | cut -d' ' -f1)"
echo "stand-in image ref (the machine's environment is not an image): $IMG"

# Run verify through the init, as a container would: it sets TMPDIR, the
# caches and the fingerprint from the lock's runtime block.
verify_run() { # lock tag
  "$PY" -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["runtime"]))' "$1" > "$W/runtime-$2.json"
  local pre=()
  if [ -x bin/imagectl-init ]; then pre=(env IMAGECTL_RUNTIME_CONFIG="$W/runtime-$2.json" IMAGECTL_IMAGE_DIGEST="${IMG#*@}" bin/imagectl-init --); fi
  local t0=$(date +%s%N)
  "${pre[@]}" .gpu/imagectl verify "$IMG" --lock "$1" --runtime in-place --python "$PY" -o json > "$W/verify-$2.json" 2> "$W/verify-$2.stderr"
  local rc=$?
  echo "verify $2: rc=$rc wall=$(( ($(date +%s%N) - t0) / 1000000 )) ms"
  cat "$W/verify-$2.stderr"
  "$PY" - "$W/verify-$2.json" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
print("passed=%s duration=%s runtime=%s" % (r["passed"], r["duration"], r["runtime"]))
for c in r["checks"]:
    print("%-24s %-4s %-28s %-30s %6.2fs %s" % (c["name"], c["status"], c.get("value", "")[:28], c.get("threshold", "")[:30], c["seconds"], c.get("detail", "")[:300]))
PYEOF
}

step "verify: the machine's own lock (must pass)"
# The init waits for runtime.storage.path to be a mount point: bind-mount a disk folder there.
mkdir -p /var/tmp/imagectl-storage /tmp/imagectl-storage
mountpoint -q /tmp/imagectl-storage || mount --bind /var/tmp/imagectl-storage /tmp/imagectl-storage || echo "bind mount failed: the init will fall back to local paths"
rm -rf /tmp/imagectl-storage/*
verify_run "$PASS" pass
if [ -z "${SKIP_PASS2:-}" ]; then
step "verify: same lock, second run (caches already warm on storage)"
verify_run "$PASS" pass2
fi
step "verify: the torch 2.6 lock (must fail, naming every drifted version)"
verify_run "$OLD" torch26
for f in images/*/lock.json; do
  [ -f "$f" ] || continue
  t=$(basename "$(dirname "$f")"); step "verify: shipped $f"; verify_run "$f" "shipped-$t"
done

step "kubernetes path: render the Job, run its run.sh from the ConfigMap here (through the init), evaluate the log"
.gpu/imagectl verify "$IMG" --lock "$PASS" --runtime kubernetes --render-job > "$W/job.yaml"; echo "render rc=$?"
rm -rf /imagectl-probes && mkdir -p /imagectl-probes
"$PY" - "$W/job.yaml" <<'PYEOF'
import sys, yaml
cm = next(d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "ConfigMap")
for k, v in cm["data"].items():
    open("/imagectl-probes/" + k, "w").write(v)
print("wrote", sorted(cm["data"]))
PYEOF
t0=$(date +%s%N)
env IMAGECTL_RUNTIME_CONFIG="$W/runtime-pass.json" bin/imagectl-init -- env PATH="$(dirname "$PY"):$PATH" /bin/sh /imagectl-probes/run.sh > "$W/job.log" 2> "$W/job.stderr"
echo "job script rc=$? wall=$(( ($(date +%s%N) - t0) / 1000000 )) ms"
.gpu/imagectl verify "$IMG" --lock "$PASS" --runtime kubernetes --job-log "$W/job.log" > "$W/verify-joblog.txt"; echo "job-log verify rc=$?"
cat "$W/verify-joblog.txt"

step "bare torch all_reduce, same size (baseline for busbw)"
for i in 1 2 3; do "$PY" -m torch.distributed.run --nproc-per-node "$("$PY" -c 'import torch;print(torch.cuda.device_count())')" hack/gpu/bare_allreduce.py --bytes 268435456 --iters 20 --warmup 5 2>&1 | grep bare_allreduce; done | tee "$W/bare-allreduce.jsonl"

step "go test -tags gpu"
[ -n "${SKIP_GOTEST:-}" ] && echo "skipped (SKIP_GOTEST)" || IMAGECTL_GPU_LOCK="$PASS" IMAGECTL_GPU_PYTHON="$PY" .gpu/verify-gpu.test -test.v -test.run '^TestGPU' 2>&1 | tail -40

step done
cp "$OUT/run.log" "$W/run.log" 2>/dev/null
tar -C "$W" -czf "$OUT/gpu-run.tar.gz" .

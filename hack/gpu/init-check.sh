#!/usr/bin/env bash
# imagectl-init on the GPU machine (no docker there): runs the init with a
# runtime config whose driver floor is 525.60.13 and prints the driver check
# and the fingerprint, which must list every GPU the driver exposes. Then the
# same with a floor above the real driver (must refuse with exit 8, naming
# both versions), the doctor, and the init as PID 1 in a PID namespace.
# Needs bin/imagectl-init (make bin/imagectl-init). Never changes the host:
# no swappiness in the config, /dev/shm only measured (it is far above 1G).
# Exit 0 only when every check passed.
set -u
cd "$(dirname "$0")/../.."
INIT=${INIT:-$PWD/bin/imagectl-init}
W=$(mktemp -d /tmp/init-check.XXXXXX)
fails=0
check() { if eval "$2"; then echo "PASS $1"; else echo "FAIL $1"; fails=$((fails+1)); fi; }
step() { echo; echo "--- $*"; }

[ -x "$INIT" ] || { echo "init-check: $INIT missing (make bin/imagectl-init)"; exit 1; }
step host
head -1 /proc/driver/nvidia/version 2>/dev/null || echo "no /proc/driver/nvidia/version"
want_gpus=$(ls -d /proc/driver/nvidia/gpus/*/ 2>/dev/null | wc -l)
echo "GPUs under /proc/driver/nvidia/gpus: $want_gpus"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=index,name,driver_version,pci.bus_id --format=csv,noheader

cat > "$W/runtime.json" <<JSON
{
  "storage": {"ready_file": "$W/storage/.ready", "timeout": "5s", "required": true},
  "min_shm_bytes": 1073741824,
  "tmpdir": "$W/storage/tmp",
  "caches": {"inductor": "$W/storage/cache/inductor", "triton": "$W/storage/cache/triton", "hf": "$W/storage/hf", "cuda": "$W/storage/cache/cuda"},
  "driver_floor": "525.60.13",
  "driver_policy": "fail",
  "fingerprint_path": "$W/storage/fingerprint.json",
  "image": {"name": "gpu-machine", "cuda": "12.4"}
}
JSON
mkdir -p "$W/storage" && touch "$W/storage/.ready"
export IMAGECTL_RUNTIME_CONFIG=$W/runtime.json IMAGECTL_IMAGE_DIGEST=sha256:gpu-machine-in-place

step "driver check, floor 525.60.13 (policy fail)"
IMAGECTL_INIT_DEBUG=1 "$INIT" -- sh -c 'echo "command ran: TORCHINDUCTOR_CACHE_DIR=$TORCHINDUCTOR_CACHE_DIR"' > "$W/run.out" 2> "$W/run.err"
rc=$?
cat "$W/run.err" "$W/run.out"
check "init exit 0 with the real driver above 525.60.13 (rc=$rc)" '[ "$rc" = 0 ]'
check "the command ran" 'grep -q "command ran" "$W/run.out"'
check "summary names the driver" 'grep -Eq "driver [0-9]+\.[0-9]+" "$W/run.err"'

step fingerprint
cat "$W/storage/fingerprint.json" 2>/dev/null || echo "(no fingerprint)"
got_gpus=$(grep -c '"bus_location"' "$W/storage/fingerprint.json" 2>/dev/null); got_gpus=${got_gpus:-0}
check "fingerprint lists every GPU ($got_gpus of $want_gpus)" '[ "$want_gpus" -gt 0 ] && [ "$got_gpus" = "$want_gpus" ]'
check "fingerprint has the driver version" 'grep -Eq "\"version\": \"[0-9]+\.[0-9]+" "$W/storage/fingerprint.json"'
if command -v nvidia-smi >/dev/null; then
  smi=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)
  check "driver version matches nvidia-smi ($smi)" 'grep -q "\"version\": \"$smi\"" "$W/storage/fingerprint.json"'
fi

step "driver check, floor 9999.0 (above any driver; must refuse)"
IMAGECTL_DRIVER_FLOOR=9999.0 "$INIT" -- sh -c 'echo "command ran"' > "$W/old.out" 2> "$W/old.err"
rc=$?
cat "$W/old.err" "$W/old.out"
check "exit 8 when below the floor (rc=$rc)" '[ "$rc" = 8 ]'
check "message names both versions" 'grep -q "9999.0" "$W/old.err" && grep -Eq "driver [0-9]+\.[0-9]+\.[0-9]+ is older" "$W/old.err"'
check "the command did not run" '! grep -q "command ran" "$W/old.out"'

step doctor
"$INIT" doctor; echo "doctor rc=$?"
"$INIT" doctor -o json > "$W/doctor.json"; echo "doctor -o json rc=$?"
check "doctor: gpu ok" 'grep -A2 "\"name\": \"gpu\"" "$W/doctor.json" | grep -q "\"status\": \"ok\""'

step "PID 1 in a PID namespace"
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null; then
  unshare --pid --fork --mount-proc "$INIT" -- sh -c 'i=0; while [ $i -lt 50 ]; do (sleep 0.2 &); i=$((i+1)); done; sleep 1; echo "pid $$"; exit 3'
  rc=$?
  check "exit code passes through as PID 1 (rc=$rc)" '[ "$rc" = 3 ]'
else
  echo "skipped: needs root and unshare"
fi

echo
echo "init-check: $fails failed"
rm -rf "$W"
[ "$fails" = 0 ]

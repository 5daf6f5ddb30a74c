# Settings and helpers shared by hack/gpu/e2e.sh and hack/gpu/k8s-e2e.sh
# (sourced from the repository root; k8s-e2e.sh reads what e2e.sh left in
# $G, so both must agree on these).
repo=$PWD
G=/tmp/g                          # the run's state, kept between calls while the machine is warm
B=$repo/bin                       # the carried tools, unpacked
OUT=${OUT:-/tmp/gpu-out}          # what comes back from the device call
PY=/opt/torch/.venv/bin/python3   # the machine's torch venv
[ -x "$PY" ] || PY=python3        # (elsewhere: hack/gpu/k8s-rehearse.sh)
REG=127.0.0.1:5000                # e2e.sh's loopback registry
NAME=h200-torch2.11-cu130         # the image hack/gpu/h200.hcl defines

step() { echo; echo "=== $* ($(date -u +%H:%M:%S))"; }

# timed NAME CMD...: run, print rc and wall seconds on stderr and keep them
# in $TIMES (default $G/times.tsv).
timed() {
  local n=$1 t0 rc ms
  shift
  t0=$(date +%s%N)
  "$@"
  rc=$?
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  printf '%s\t%s\t%d.%03d\n' "$n" "$rc" $((ms / 1000)) $((ms % 1000)) | tee -a "${TIMES:-$G/times.tsv}" >&2
  return $rc
}

# show_result FILE: a verify result (-o json) in a few lines, each check one.
show_result() {
  "$PY" - "$1" <<'PYEOF'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print("no result:", e); sys.exit(0)
print("passed=%s duration=%s runtime=%s proof=%s gpus=%d" % (r["passed"], r["duration"], r["runtime"], json.dumps(r.get("proof")), len(r["host"].get("gpus") or [])))
for c in r["checks"]:
    print("  %-24s %-4s %-28s %6.2fs %s" % (c["name"], c["status"], c.get("value", "")[:28], c["seconds"], c.get("detail", "")[:240]))
PYEOF
}

# want WHAT GOT EXPECTED: a "want" of the run; a miss is printed and counted
# in $FAILED, and the script exits non-zero at its end (wants_met).
FAILED=0
want() {
  if [ "$2" = "$3" ]; then
    echo "want ok: $1 ($2)"
  else
    echo "WANT FAILED: $1: got $2, want $3"
    FAILED=$((FAILED + 1))
  fi
}

# check_status FILE CHECK STATUS: want the verify result's CHECK at STATUS.
check_status() {
  local got
  got=$("$PY" -c 'import json,sys; r=json.load(open(sys.argv[1])); print(next((c["status"] for c in r["checks"] if c["name"] == sys.argv[2]), "absent"))' "$1" "$2" 2>/dev/null || echo "no-result")
  want "$(basename "$1") $2" "$got" "$3"
}

wants_met() {
  if [ "$FAILED" -ne 0 ]; then
    echo "$FAILED want(s) not met"
    exit 1
  fi
  echo "every want met"
}

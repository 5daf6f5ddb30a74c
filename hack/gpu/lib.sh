# Helpers shared by hack/gpu/e2e.sh and hack/gpu/k8s-e2e.sh (sourced; they
# set G, the run's state folder, and PY, the machine's python3).

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

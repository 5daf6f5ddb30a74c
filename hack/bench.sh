#!/usr/bin/env bash
# make bench: every benchmark, against the services `make up` starts.
# Each hack/bench/*.sh prints the ratios it measured in one run; the output is
# also kept in .cache/bench/NAME.txt. GPU benchmarks (verify: wall time on
# 2 x H200, all-reduce vs bare torch) run on the GPU machine: hack/gpu/run.sh,
# results in docs/gpu-runs/.
set -uo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false

started=
if ! hack/up.sh status >/dev/null 2>&1; then started=1; fi
hack/up.sh || { echo "bench: make up failed" >&2; exit 1; }
cleanup() { [ -z "$started" ] || hack/down.sh; }
trap cleanup EXIT

mkdir -p .cache/bench
failed=()
for b in hack/bench/*.sh; do
  n=$(basename "$b" .sh)
  printf '\n== bench: %s\n' "$n"
  if ! "$b" 2>&1 | tee ".cache/bench/$n.txt"; then failed+=("$n"); fi
done
echo
if [ ${#failed[@]} -gt 0 ]; then
  echo "bench: failed: ${failed[*]} (output in .cache/bench/)"
  exit 1
fi
echo "bench: all ran; outputs in .cache/bench/"

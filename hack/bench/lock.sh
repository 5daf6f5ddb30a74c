#!/usr/bin/env bash
# Lock benchmarks: `lock check` on the shipped specs (offline, target
# < 100 ms); a full lock of the demo against the bare apt and pip solves it
# drives, in one run (target lock/bare <= 1.2); and the lock of the pytorch
# spec's four-image matrix with IMAGECTL_BENCH_BIG_BYTES (default 1 GiB) torch
# stand-ins on a plain static index against the bare pip resolutions (target
# lock/bare <= 1.2, each big wheel fetched at most once per lock run), with
# Debian bookworm's pip 23.0.1 and with Debian forky's newer pip
# (hack/bench/pipwhl.sh) as the resolver. Needs `make up` (.cache/env) for
# the last two; the first runs anywhere.
set -euo pipefail
cd "$(dirname "$0")/../.."
export GOTOOLCHAIN=local
if [[ -f .cache/env ]]; then
  # shellcheck disable=SC1091
  source .cache/env
fi
go test ./internal/lock/resolve/ -run '^$' -bench 'BenchmarkCheckShipped' -benchtime 50x
if [[ -n "${BUILDKIT_HOST:-}" ]]; then
  go test ./internal/lock/resolve/ -run '^$' -bench 'BenchmarkLockDemo' -benchtime 3x -timeout 20m
  if newpip=$(hack/bench/pipwhl.sh); then
    export IMAGECTL_BENCH_NEW_PIP=$newpip
  else
    echo "lock.sh: no newer pip wheel from Debian (hack/bench/pipwhl.sh failed): the matrix runs with pip 23.0.1 only" >&2
  fi
  go test ./internal/lock/resolve/ -run '^$' -bench 'BenchmarkLockMatrix' -benchtime 1x -timeout 60m
else
  echo "lock.sh: BUILDKIT_HOST not set (no make up): skipping BenchmarkLockDemo" >&2
fi
# Whole process, as users run it: imagectl lock check on the demo lock.
if [[ -x bin/imagectl && -f images/demo/lock.json ]]; then
  start=$(date +%s%N)
  for _ in $(seq 20); do bin/imagectl lock check --image demo >/dev/null 2>&1 || true; done
  echo "imagectl lock check --image demo: $(( ($(date +%s%N) - start) / 20000000 )) ms per run (20 runs, process start included)"
fi

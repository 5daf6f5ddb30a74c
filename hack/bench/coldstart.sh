#!/usr/bin/env bash
# Cold start benchmark (make bench, issue 33), against the containerd and
# stargz-snapshotter `make up` started: the demo image's first step from a
# cold containerd, pulled whole (gzip, overlayfs) vs lazily (eStargz,
# stargz-snapshotter). Prints full-s/op, lazy-s/op and the ratio lazy/full
# from one interleaved run. The GPU machine's figures for the 3.8 GB torch
# image are in docs/gpu-runs/2026-12-04-nvidia-h200-coldstart.
# stargz-snapshotter keeps fetched chunks in its cache across mounts: lazy
# iterations after the first are warm (docs/build.md, "Lazy pulling").
# IMAGECTL_BENCH_COLDSTART_N sets the iterations (default 3).
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -f .cache/env ] || { echo "bench/coldstart: .cache/env is missing: run make up first" >&2; exit 1; }
# shellcheck disable=SC1091
. .cache/env
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
exec go test -run '^$' -bench '^BenchmarkColdStart$' -benchtime "${IMAGECTL_BENCH_COLDSTART_N:-3}x" -timeout 20m ./internal/verify/containerd/

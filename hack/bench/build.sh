#!/usr/bin/env bash
# Build benchmarks (make bench), against the services `make up` started:
#  - no-op rebuild of the demo image: imagectl (CLI and library) vs buildctl
#    solving and pushing the same cached definition (target <= 1.1x);
#  - periphery-only update on an image with a big frozen wheel
#    (IMAGECTL_BENCH_CORE_MB, default 300): bytes in changed layers / image
#    bytes (target < 5%).
# Ratios are measured in one run and printed. Extra arguments go to go test
# (e.g. -bench NoopVsBuildctl for the no-op rebuild alone);
# IMAGECTL_BENCH_REWRITE=0 leaves out its rewrite-timestamp rounds,
# IMAGECTL_BENCH_ROUNDS=N times N no-op rounds a side instead of 5.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -f .cache/env ] || { echo "bench/build: .cache/env is missing: run make up first" >&2; exit 1; }
# shellcheck disable=SC1091
. .cache/env
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
exec go test -run '^$' -bench '^BenchmarkBuild' -benchtime 1x -timeout 30m ./internal/build/ "$@"

#!/usr/bin/env bash
# Platform benchmarks (make bench), against the services `make up` started,
# on the two-platform base (IMAGECTL_BASE_MULTI; linux/arm64 under QEMU,
# hack/binfmt.sh), with a wheel index of the benchmark's own whose demo-core
# holds IMAGECTL_BENCH_PLATFORMS_CORE_MB (default 64) MB of payload:
#  - lock of the demo for linux/amd64 alone, linux/arm64 alone and both, each
#    from a pruned build cache: seconds per platform, arm64/amd64
#    (emulated/native) ratio;
#  - build of each of those locks from a pruned build cache, pushed: seconds
#    per platform, emulated/native ratio;
#  - periphery-only update of the two-platform image (demo-util 1.1.0,
#    resolve.Upgrade, rebuild): changed bytes / image bytes per platform
#    (target < 5%; a miss fails the benchmark).
# Measured in one run and printed, with the machine's load average.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -f .cache/env ] || { echo "bench/platforms: .cache/env is missing: run make up first" >&2; exit 1; }
# shellcheck disable=SC1091
. .cache/env
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
exec go test -run '^$' -bench '^BenchmarkPlatforms$' -benchtime 1x -timeout 60m ./internal/build/

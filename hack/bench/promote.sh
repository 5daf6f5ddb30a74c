#!/usr/bin/env bash
# Promotion benchmark (make bench), against the registry `make up` started:
# one image per iteration promoted from a staging to a release repository of
# the same registry. Prints wall time per image (ns/op, MB/s) and the blob
# bytes uploaded per promotion (uploaded-B/op, target 0: every blob is
# mounted across repositories, mounted-blobs/op).
# IMAGECTL_BENCH_PROMOTE_MB sets the image size (default 64 MiB, 4 layers).
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -f .cache/env ] || { echo "bench/promote: .cache/env is missing: run make up first" >&2; exit 1; }
# shellcheck disable=SC1091
. .cache/env
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
exec go test -run '^$' -bench '^BenchmarkPromote$' -benchtime "${IMAGECTL_BENCH_PROMOTE_N:-3}x" -timeout 20m ./internal/promote/

#!/usr/bin/env bash
# Scan benchmarks (make bench): one grype scan of an image's SBOM against
# the fixture database (internal/scan/testdata/vunnel), for the demo image
# and for the 30-wheel torch 2.6.0+cu124 image (4.7 GB of wheels; the scan
# reads only its SBOM). Needs no services.
set -euo pipefail
cd "$(dirname "$0")/../.."
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
exec go test -run '^$' -bench '^BenchmarkScan$' -benchtime 10x -timeout 20m ./internal/scan/ "$@"

#!/usr/bin/env bash
# Init start-up benchmark: time from the exec of the entrypoint to the exec of
# the user's command, storage ready and every start-up step configured, for
# imagectl-init, tini running the same command (Debian package tini), and a
# bash entrypoint doing the same steps; plus the init's own preparation
# measured in-process (BenchmarkPrepare). Ratios come from one interleaved run.
# Targets: imagectl-init/tini <= 2, imagectl-init < 10 ms.
set -euo pipefail
cd "$(dirname "$0")/../.."
export GOTOOLCHAIN=local
if ! command -v tini >/dev/null; then
  echo "init.sh: installing tini" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends tini >/dev/null ||
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends tini >/dev/null; }
fi
if [[ ! -x bin/imagectl-init ]]; then
  CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o bin/imagectl-init ./cmd/imagectl-init
fi
go test ./internal/runtime/ -run '^$' -bench 'BenchmarkPrepare' -benchtime 500x
go run ./hack/bench/initstart -init bin/imagectl-init -n "${INIT_BENCH_RUNS:-300}" "$@"

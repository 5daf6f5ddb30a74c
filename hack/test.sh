#!/usr/bin/env bash
# Starts the services (hack/up.sh), runs every test with IMAGECTL_E2E=1 and
# .cache/env loaded, then stops the services, whatever happened.
# Extra go test flags: TESTFLAGS='-run Foo -v' make test. Packages: PKGS.
set -uo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false

# Services that were already running (someone's `make up`) are left running;
# IMAGECTL_DOWN=1 stops them anyway. A fresh machine (CI) always stops them.
down_done=
if [ "${IMAGECTL_DOWN:-}" != 1 ] && hack/up.sh status 2>/dev/null; then
  echo "test: services already running: leaving them up afterwards (make down stops them)" >&2
  down_done=1
fi
down() { [ -n "$down_done" ] || { down_done=1; hack/down.sh; }; }
trap down EXIT
trap 'exit 130' INT TERM

hack/up.sh || { echo "test: make up failed" >&2; exit 1; }
# shellcheck disable=SC1091
. .cache/env
export IMAGECTL_E2E=1

mkdir -p .cache/logs
log=.cache/logs/test.log
start=$(date +%s)
# shellcheck disable=SC2086
go test -timeout 45m ${TESTFLAGS:-} ${PKGS:-./...} 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
down

ok=$(grep -cE '^ok[[:space:]]' "$log")
failed=$(grep -cE '^[[:space:]]*--- FAIL:' "$log")
failed_pkgs=$(grep -cE '^FAIL[[:space:]]+[^[:space:]]+' "$log")
notests=$(grep -cE '^\?[[:space:]].*no test files' "$log")
echo
echo "test: go test exited $rc after $(( $(date +%s) - start ))s; failing tests: $failed; full log in $log"
if [ "$rc" -ne 0 ] && [ "$failed_pkgs" -eq 0 ]; then failed_pkgs=1; fi
echo "packages: $ok passed, $failed_pkgs failed, $notests skipped"
exit "$rc"

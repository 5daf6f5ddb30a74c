#!/usr/bin/env bash
# Dead code check of `make lint`: bin/deadcode -test (golang.org/x/tools, built
# by `hack/tools.sh lint`) over every main package, ./cmd/... included, and
# every test executable, with the gpu tag so that what only the GPU tests call
# counts as live. Each function it reports must be named in hack/deadcode.allow,
# one a line with the reason it stays; the check fails both ways: a function
# that is dead and not allowed (remove it), or an allowed name that is no
# longer reported (remove the line).
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false LC_ALL=C
allow=hack/deadcode.allow
[ -x bin/deadcode ] || hack/tools.sh lint
# One line per dead function: imagectl/internal/PKG.FUNC (or .TYPE.METHOD).
found=$(bin/deadcode -test -tags gpu -f '{{range .Funcs}}{{$.Path}}.{{.Name}}{{"\n"}}{{end}}' ./... | sed '/^$/d' | sort -u)
# The allow-list: the first field of each line; # starts a comment.
allowed=$(sed -e 's/#.*//' "$allow" | awk 'NF { print $1 }' | sort -u)
rc=0
if bare=$(sed -e 's/#.*//' "$allow" | awk 'NF == 1') && [ -n "$bare" ]; then
  echo "deadcode: $allow: every line needs a reason after the name:" >&2
  sed 's/^/  /' <<<"$bare" >&2
  rc=1
fi
if new=$(comm -23 <(echo "$found") <(echo "$allowed")) && [ -n "$new" ]; then
  echo "deadcode: unreachable from any main or test (remove it, or add it to $allow with a reason):" >&2
  sed 's/^/  /' <<<"$new" >&2
  rc=1
fi
if stale=$(comm -13 <(echo "$found") <(echo "$allowed")) && [ -n "$stale" ]; then
  echo "deadcode: $allow names what is no longer dead code (remove the line):" >&2
  sed 's/^/  /' <<<"$stale" >&2
  rc=1
fi
[ "$rc" -ne 0 ] || echo "deadcode: no dead code beyond $allow" >&2
exit "$rc"

#!/usr/bin/env bash
# Fetches Debian's python3-pip-whl from SUITE (default forky) through the
# machine's own Debian mirror (hack/base.sh mirror; no host is written here)
# and prints the pip wheel it holds: .cache/pipwhl/SUITE/pip-X-py3-none-any.whl.
# The lock benchmark offers it on its PyPI stand-in next to bookworm's pip
# 23.0.1, as the real PyPI offers new pips: pip >= 25.3 (PR 13482) does not
# download the wheels it resolved at the end of `install --dry-run`.
#
#   hack/bench/pipwhl.sh [SUITE]
set -euo pipefail
cd "$(dirname "$0")/../.."
suite=${1:-forky}
out=.cache/pipwhl/$suite
if ls "$out"/pip-*-py3-none-any.whl >/dev/null 2>&1; then
  ls "$PWD/$out"/pip-*-py3-none-any.whl | tail -n1
  exit 0
fi
mirror=$(hack/base.sh mirror)
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/deb"
echo "deb [signed-by=$keyring] $mirror $suite main" >"$work/sources.list"
apto=(-o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
  -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache" -o Dir::State::status=/dev/null
  -o APT::Sandbox::User=root)
apt-get "${apto[@]}" update -qq >&2
(cd "$work/deb" && apt-get "${apto[@]}" download -qq python3-pip-whl >&2)
dpkg-deb -x "$work"/deb/python3-pip-whl_*.deb "$work/x"
mkdir -p "$out"
cp "$work"/x/usr/share/python-wheels/pip-*-py3-none-any.whl "$out/"
ls "$PWD/$out"/pip-*-py3-none-any.whl | tail -n1

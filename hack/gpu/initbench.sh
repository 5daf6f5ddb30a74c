#!/usr/bin/env bash
# Builds the init start-up bench for the GPU machine into DEST (default
# .gpu/initbench, which git ignores): the ratio to tini is measured there
# (idle, 16 cores; the shared 2-core development machine is too loaded for a
# ratio to mean anything, see docs/init.md "Start-up"). Nothing there can be
# built or fetched, so everything goes prebuilt and static:
#   initstart                 hack/bench/initstart
#   tini                      this machine's Debian tini (dynamic; the GPU machine has glibc)
#   bench-gomin, bench-gosig  the two Go floors (initstart -floors)
#   imagectl-init             the init at the work tree's state
#   init-NAME                 the init at git revision REV, for each NAME=REV argument
#                             (timed in the same interleaved run with -also NAME=...)
# and prints the command to run there (device tool: carry DEST).
#
#   hack/gpu/initbench.sh before=main
set -euo pipefail
cd "$(dirname "$0")/../.."
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false CGO_ENABLED=0
dest=${DEST:-.gpu/initbench}
rm -rf "$dest" && mkdir -p "$dest"
build() { go build -trimpath -ldflags '-s -w' -o "$@"; }
build "$dest/initstart" ./hack/bench/initstart
build "$dest/imagectl-init" ./cmd/imagectl-init
go run ./hack/bench/initstart -floors "$dest"
tini=$(command -v tini) || { echo "initbench.sh: no tini here (hack/deps.sh installs it)" >&2; exit 1; }
cp "$tini" "$dest/tini"
also=()
for a in "$@"; do
  name=${a%%=*} rev=${a#*=}
  [[ $a == *=* && -n $name && -n $rev ]] || { echo "initbench.sh: $a: want NAME=REV" >&2; exit 2; }
  src=$(mktemp -d)
  git archive "$rev" | tar -x -C "$src"
  (cd "$src" && build "$OLDPWD/$dest/init-$name" ./cmd/imagectl-init)
  rm -rf "$src"
  also+=(-also "$name=./init-$name")
done
du -sh "$dest" >&2
cat <<EOF
# on the GPU machine (device tool, kind nvidia-h200; carry: ["$dest"]):
cd $dest && (uname -r; nproc; uptime; for r in 1 2 3; do echo "== run \$r"; ./initstart -tini ./tini -init ./imagectl-init -gomin ./bench-gomin -gosig ./bench-gosig ${also[*]} -n 300; done) 2>&1 | tee \$OUT/initbench.txt
EOF

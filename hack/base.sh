#!/usr/bin/env bash
# Builds the local Debian bookworm base (debootstrap minbase + python3,
# python3-venv, python3-pip, ca-certificates), packs it as a reproducible
# one-layer OCI image (hack/mkbase) and pushes it to the local registry as
# $IMAGECTL_REGISTRY/imagectl/debian-base:bookworm.
#
#   hack/base.sh            build (cached under .cache/base) and push
#   hack/base.sh arm64      the same for linux/arm64 (debootstrap --foreign, the
#                           second stage under QEMU: hack/binfmt.sh; cached under
#                           .cache/base-arm64), pushed as debian-base:bookworm-arm64,
#                           and the two as one index, debian-base:bookworm-multi
#   hack/base.sh mirror     print the Debian mirror from the machine's apt sources
#   hack/base.sh rootfs     only build (cached) the amd64 layer, no registry
#                           needed: make demo runs it while the tools compile
#   hack/base.sh layer DIR PACKAGES
#                           only build (cached) DIR/layer.tar.gz: debootstrap
#                           minbase plus PACKAGES (comma-separated), the same
#                           recipe; hack/upstream.sh makes its bases this way
#
# The rootfs is made once and cached as .cache/base/layer.tar.gz, keyed by its
# inputs (suite, packages, mirror); a second run only pushes (seconds).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false

suite=bookworm
# The rootfs architecture (Debian's name); BASE_ARCH or the argument "arm64".
arch=${BASE_ARCH:-amd64}
if [ "${1:-}" = arm64 ]; then arch=arm64; shift; fi
packages=python3,python3-venv,python3-pip,ca-certificates
# Fixed: the base's timestamps never depend on when it was built.
export SOURCE_DATE_EPOCH=${BASE_SOURCE_DATE_EPOCH:-1704067200}

# apt_uri SUITE: the first deb URI the machine's apt sources give for SUITE.
apt_uri() {
  local want=$1 f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -r "$f" ] || continue
    awk -v want="$want" '
      $1 == "deb" {
        i = 2; if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
        if ($(i+1) == want) { print $i; exit }
      }' "$f"
  done
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -r "$f" ] || continue
    awk -v want="$want" '
      function flush() {
        if (types ~ /(^| )deb( |$)/ && enabled != "no") {
          n = split(suites, s, " "); for (j = 1; j <= n; j++) if (s[j] == want) { split(uris, u, " "); print u[1]; found = 1; exit }
        }
        types = ""; uris = ""; suites = ""; enabled = ""
      }
      /^[ \t]*#/ { next }
      /^[ \t]*$/ { flush(); next }
      { key = tolower($1); sub(/:$/, "", key); $1 = ""; sub(/^ +/, ""); val = $0 }
      key == "types" { types = val } key == "uris" { uris = val }
      key == "suites" { suites = val } key == "enabled" { enabled = tolower(val) }
      END { if (!found) flush() }' "$f"
  done
}

mirror() {
  local m
  m=$(apt_uri "$suite" | head -n1)
  if [ -z "$m" ]; then
    echo "base: no 'deb' source for $suite in /etc/apt/sources.list or /etc/apt/sources.list.d/" >&2
    return 1
  fi
  echo "${m%/}"
}

if [ "${1:-}" = mirror ]; then
  mirror
  exit 0
fi

security=$(apt_uri "$suite-security" | head -n1)
mkdir -p "$root/bin"

# hack/mkbase, rebuilt when its source is newer than the binary; built when
# first needed, after debootstrap (make demo runs that while the tools compile).
mkbase=$root/bin/mkbase
need_mkbase() {
  if [ ! -x "$mkbase" ] || [ -n "$(find hack/mkbase -newer "$mkbase" -name '*.go' | head -n1)" ]; then
    go build -o "$mkbase" ./hack/mkbase
  fi
}

# build_layer CACHE PACKAGES: CACHE/layer.tar.gz, a debootstrap minbase of
# $suite with PACKAGES, remade only when its inputs changed.
build_layer() {
  local cache=$1 packages=$2 m inputs start rootfs
  m=$(mirror)
  mkdir -p "$cache"
  # recipe: bump when the steps below change, so cached layers are remade.
  inputs="recipe=2 suite=$suite packages=$packages mirror=$m security=${security:-none} epoch=$SOURCE_DATE_EPOCH"
  [ "$arch" = amd64 ] || inputs="$inputs arch=$arch"
  if [ -f "$cache/layer.tar.gz" ] && [ "$(cat "$cache/inputs" 2>/dev/null)" = "$inputs" ]; then
    return 0
  fi
  command -v debootstrap >/dev/null || { echo "base: debootstrap is missing (make deps)" >&2; return 1; }
  echo "base: debootstrap --variant=minbase $suite (+$packages) from $m into $cache (about a minute)" >&2
  start=$(date +%s)
  rootfs=$cache/rootfs
  rm -rf "$rootfs"
  if [ "$arch" = amd64 ]; then
    debootstrap --variant=minbase --include="$packages" "$suite" "$rootfs" "$m" > "$cache/debootstrap.log" 2>&1
  else
    # Foreign: unpack here, then run the second stage inside the rootfs, its
    # $arch binaries under QEMU user emulation (the F-flag binfmt handler).
    hack/binfmt.sh status || { echo "base: no binfmt handler for $arch: run hack/binfmt.sh (make up does)" >&2; return 1; }
    { debootstrap --variant=minbase --arch="$arch" --foreign --include="$packages" "$suite" "$rootfs" "$m" &&
      chroot "$rootfs" /debootstrap/debootstrap --second-stage; } > "$cache/debootstrap.log" 2>&1
  fi || {
    tail -n 30 "$cache/debootstrap.log" >&2
    echo "base: debootstrap failed; log in $cache/debootstrap.log" >&2
    return 1
  }
  # The lock stage runs apt-get update inside the base: name the mirror.
  {
    echo "deb $m $suite main"
    echo "deb $m $suite-updates main"
    [ -n "$security" ] && echo "deb ${security%/} $suite-security main"
  } > "$rootfs/etc/apt/sources.list"
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb
  : > "$rootfs/etc/machine-id"
  rm -f "$rootfs"/etc/hostname "$rootfs"/etc/resolv.conf
  need_mkbase
  "$mkbase" tar "$rootfs" "$cache/layer.tar.gz"
  echo "$inputs" > "$cache/inputs.tmp" && mv "$cache/inputs.tmp" "$cache/inputs"
  rm -rf "$rootfs"
  echo "base: rootfs packed in $(( $(date +%s) - start ))s" >&2
}

if [ "${1:-}" = rootfs ]; then
  [ "$arch" = amd64 ] || { echo "usage: hack/base.sh rootfs (amd64 only)" >&2; exit 2; }
  build_layer "$root/.cache/base" "$packages"
  exit 0
fi

if [ "${1:-}" = layer ]; then
  [ $# -eq 3 ] || { echo "usage: hack/base.sh layer DIR PACKAGES" >&2; exit 2; }
  build_layer "$2" "$3"
  exit 0
fi

: "${IMAGECTL_REGISTRY:?base: IMAGECTL_REGISTRY is not set (run through make up)}"
ref="$IMAGECTL_REGISTRY/imagectl/debian-base:$suite"
cache=$root/.cache/base
if [ "$arch" != amd64 ]; then
  amd64_ref=$(cat "$cache/ref" 2>/dev/null) || { echo "base: push the amd64 base first (hack/base.sh)" >&2; exit 1; }
  ref="$ref-$arch"
  cache=$root/.cache/base-$arch
fi
build_layer "$cache" "$packages"
need_mkbase

# Skip the push when the registry already holds what the last run pushed.
if [ -f "$cache/digest" ] && [ "$cache/digest" -nt "$cache/layer.tar.gz" ] && [ -x bin/crane ] &&
   [ "$(bin/crane digest "$ref" 2>/dev/null)" = "$(cat "$cache/digest")" ]; then
  echo "base: $ref@$(cat "$cache/digest") is up to date" >&2
else
  digest=$("$mkbase" image "$cache/layer.tar.gz" --arch "$arch" --push "$ref")
  echo "$digest" > "$cache/digest.tmp" && mv "$cache/digest.tmp" "$cache/digest"
  echo "$ref@$digest" > "$cache/ref.tmp" && mv "$cache/ref.tmp" "$cache/ref"
  echo "base: pushed $ref@$digest" >&2
fi
if [ "$arch" != amd64 ]; then
  # One tag for both platforms, shaped like a multi-platform upstream base.
  multi="$IMAGECTL_REGISTRY/imagectl/debian-base:$suite-multi"
  idx=$("$mkbase" index --push "$multi" "$amd64_ref" "$(cat "$cache/ref")")
  echo "base: pushed $multi@$idx (linux/amd64 + linux/$arch)" >&2
fi

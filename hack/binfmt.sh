#!/usr/bin/env bash
# Lets this amd64 machine run linux/arm64 binaries (the arm64 lock and build
# steps in buildkitd) under QEMU user emulation: mounts binfmt_misc when it
# is not mounted and registers Debian's qemu-aarch64-static for EM_AARCH64
# ELF files with flag F (the interpreter is opened now, so it works inside
# containers and chroots that lack it). Debian's qemu-user-static registers
# nothing by itself without binfmt-support. Idempotent; a handler that is
# already registered (by this script or anyone else) is left alone.
#
#   hack/binfmt.sh          set up (needs root)
#   hack/binfmt.sh status   exit 0 when an aarch64 handler is registered
set -euo pipefail
dir=/proc/sys/fs/binfmt_misc
qemu=/usr/bin/qemu-aarch64-static

registered() {
  local f
  for f in "$dir"/*; do
    [ -f "$f" ] || continue
    grep -q '^enabled' "$f" 2>/dev/null && grep -q "^magic 7f454c460201010000000000000000000200b700" "$f" 2>/dev/null && return 0
  done
  return 1
}

if [ "${1:-}" = status ]; then
  [ -e "$dir/register" ] && registered
  exit
fi

[ -x "$qemu" ] || { echo "binfmt: $qemu is missing (make deps installs qemu-user-static)" >&2; exit 1; }
if [ ! -e "$dir/register" ]; then
  mount -t binfmt_misc binfmt_misc "$dir"
fi
if registered; then
  echo "binfmt: an aarch64 handler is registered" >&2
  exit 0
fi
# :name:type:offset:magic:mask:interpreter:flags; the ELF header of an
# EM_AARCH64 (0xb7) 64-bit little-endian executable or shared object.
magic='\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00'
mask='\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff'
printf ':qemu-aarch64:M::%s:%s:%s:F\n' "$magic" "$mask" "$qemu" > "$dir/register" ||
  { registered && exit 0; echo "binfmt: registering $qemu failed" >&2; exit 1; } # a concurrent run may have won
echo "binfmt: registered $qemu for linux/arm64 ($dir/qemu-aarch64)" >&2

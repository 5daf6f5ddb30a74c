#!/usr/bin/env bash
# hack/gpu/pack.sh STAGE DEST: each file of STAGE xz-compressed into
# DEST/NAME.xz beside DEST/NAME.sha256 (of the uncompressed file, which the
# GPU machine's unpack checks). Only what changed is compressed again (xz of
# everything takes minutes). Prints DEST's compressed total on stderr.
set -euo pipefail
stage=${1:?usage: hack/gpu/pack.sh STAGE DEST}
dest=${2:?usage: hack/gpu/pack.sh STAGE DEST}
mkdir -p "$dest"
for f in "$stage"/*; do
  b=$(basename "$f")
  if [ -f "$dest/$b.xz" ] && [ -f "$dest/$b.sha256" ] && [ "$(sha256sum < "$f")" = "$(cat "$dest/$b.sha256")" ]; then
    continue
  fi
  xz -T0 -6 -c "$f" > "$dest/$b.xz.tmp"
  mv "$dest/$b.xz.tmp" "$dest/$b.xz"
  sha256sum < "$f" > "$dest/$b.sha256"
done
du -cb "$dest"/*.xz | tail -n1 | awk '{printf "bundle: %.1f MiB in '"$dest"'\n", $1 / 1048576}' >&2

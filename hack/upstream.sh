# shellcheck shell=bash
# The "upstream" fixture: a second distribution registry on loopback playing
# the public registry a platform team mirrors its bases from, holding
# nvidia/cuda-shaped bases WITHOUT Python:
#
#   $IMAGECTL_UPSTREAM_REGISTRY/nvidia/cuda:11.8.0-runtime-ubuntu22.04
#   $IMAGECTL_UPSTREAM_REGISTRY/nvidia/cuda:12.1.1-runtime-ubuntu22.04
#   $IMAGECTL_UPSTREAM_REGISTRY/nvidia/cuda:11.8.0-base-ubuntu22.04   (the shipped spec's)
#   $IMAGECTL_UPSTREAM_REGISTRY/nvidia/cuda:12.1.1-base-ubuntu22.04
#
# Each is an OCI image index with a linux/amd64 manifest (the shape of the
# real multi-platform tags). Both share one layer: a Debian bookworm minbase
# plus ca-certificates, with the machine's Debian mirror in
# /etc/apt/sources.list (hack/base.sh layer), and no python3. They differ in
# their config: nvidia/cuda's environment (PATH with /usr/local/nvidia/bin and
# /usr/local/cuda/bin, LD_LIBRARY_PATH, NVIDIA_*, CUDA_VERSION, NV_CUDA_*,
# NCCL_VERSION) and labels, taken from NVIDIA's Dockerfiles
# (gitlab.com/nvidia/container-images/cuda, dist/<ver>/ubuntu2204/{base,runtime})
# into hack/upstream/<repository>/<tag>.json; a -base- config has the base
# Dockerfile's environment only (no NV_LIB*, NCCL or NVTX variables: that
# flavour installs cuda-cudart and cuda-compat alone). The fixture carries no CUDA
# libraries.
#
# Sourced by hack/up.sh (it uses up.sh's alive, start, wait_for, pick_port,
# http_ok and $cache); writes .cache/env.d/upstream.env, which up.sh copies
# into .cache/env. hack/down.sh stops the registry by its recorded PID.

upstream_cache=$cache/upstream
mkdir -p "$upstream_cache/registry" "$cache/env.d"

if alive upstream-registry; then
  upstream_port=$(cat "$cache/upstream-registry.port")
  echo "up: upstream registry already running on 127.0.0.1:$upstream_port" >&2
else
  upstream_port=$(pick_port upstream-registry 5100)
  start_registry upstream-registry "$upstream_cache/registry" "$upstream_port"
  echo "$upstream_port" > "$cache/upstream-registry.port"
  wait_for upstream-registry 60 http_ok "http://127.0.0.1:$upstream_port/v2/"
  echo "up: upstream registry ready at 127.0.0.1:$upstream_port" >&2
fi
upstream_registry=127.0.0.1:$upstream_port

# The python-less rootfs, cached like the demo base's.
hack/base.sh layer "$upstream_cache/rootfs" ca-certificates
upstream_layer=$upstream_cache/rootfs/layer.tar.gz
if [ ! -f "$upstream_cache/rootfs/checked" ] || [ "$upstream_layer" -nt "$upstream_cache/rootfs/checked" ]; then
  # What makes it a fixture of the real thing: no Python at all.
  if tar -tzf "$upstream_layer" | grep -E '^(usr/)?bin/python' >&2; then
    echo "up: the upstream fixture's rootfs has a python (listed above); it must have none" >&2
    exit 1
  fi
  touch "$upstream_cache/rootfs/checked"
fi

for upstream_conf in hack/upstream/*/*/*.json; do
  upstream_tag=$(basename "$upstream_conf" .json)
  upstream_repo=${upstream_conf#hack/upstream/}
  upstream_repo=${upstream_repo%/*}
  upstream_ref=$upstream_registry/$upstream_repo:$upstream_tag
  upstream_rec=$upstream_cache/${upstream_repo//\//_}_$upstream_tag.digest
  if [ -f "$upstream_rec" ] && [ "$upstream_rec" -nt "$upstream_layer" ] && [ "$upstream_rec" -nt "$upstream_conf" ] &&
     [ "$(bin/crane digest "$upstream_ref" 2>/dev/null)" = "$(cat "$upstream_rec")" ]; then
    echo "up: upstream $upstream_ref@$(cat "$upstream_rec") is up to date" >&2
    continue
  fi
  upstream_digest=$(SOURCE_DATE_EPOCH=${BASE_SOURCE_DATE_EPOCH:-1704067200} bin/mkbase image "$upstream_layer" \
    --config "$upstream_conf" --index --push "$upstream_ref" \
    --created-by "debootstrap --variant=minbase bookworm +ca-certificates, $upstream_repo:$upstream_tag's config, no CUDA libraries (hack/upstream.sh)")
  echo "$upstream_digest" > "$upstream_rec.tmp" && mv "$upstream_rec.tmp" "$upstream_rec"
  echo "up: pushed upstream $upstream_ref@$upstream_digest" >&2
done

printf 'export IMAGECTL_UPSTREAM_REGISTRY=%q\n' "$upstream_registry" > "$cache/env.d/upstream.env.tmp"
mv "$cache/env.d/upstream.env.tmp" "$cache/env.d/upstream.env"

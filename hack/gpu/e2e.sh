#!/usr/bin/env bash
# The GPU machine end to end (device kind nvidia-h200): imagectl locks,
# builds, signs, verifies on the GPU through containerd + CDI, promotes and
# pins a real torch 2.11 image, against buildkitd, a registry and containerd
# started here. Run from the repository root on the device machine:
#
#   bash hack/gpu/e2e.sh setup build      # one device call (< 10 min)
#   bash hack/gpu/e2e.sh verify           # the next call, while the machine is warm
#   bash hack/gpu/e2e.sh bench            # and the next: pull gzip vs zstd, periphery update
#   QUICK=1 bash hack/gpu/e2e.sh setup build toolkit  # the base's CUDA toolkit check: pass, and exit 4 against another toolkit
#   QUICK=1 bash hack/gpu/e2e.sh setup build verify   # the short validation pass
#   MINIMAL=1 QUICK=1 ...: also no warm verify, in-place baseline or bare all-reduce
#   bash hack/gpu/e2e.sh coldstart        # issue 33: cold start to the first CUDA step, gzip / zstd / eStargz
#                                         # (lazy, stargz-snapshotter) without and with recorded priorities
#   bash hack/gpu/e2e.sh unpack           # issue 33: the zstd image cold, layers unpacked one at a time vs in parallel
#   bash hack/gpu/e2e.sh lazydiag         # issue 33: the eStargz image lazily, its compile probe traced and its ptxas run inside the container by nsenter (incont_diag), then checked through the FUSE mount
#   bash hack/gpu/e2e.sh race             # issue 33: 8 ptxas at once from the lazy mount while its file is cold
#   bash hack/gpu/e2e.sh cudatwice        # CUDA shipped twice: sizes on -base and -runtime flavours (issue 25)
#
# Carried in .gpu/ (hack/gpu/bundle.sh): imagectl, imagectl-init, gputool,
# buildkitd, containerd, containerd-shim-runc-v2, runc, nvidia-ctk,
# nvidia-cdi-hook, each xz-compressed. Daemons start detached (setsid) and
# state lives in /tmp/g, so a later call finds them while the machine stays
# warm. Fixtures (documented in docs/gpu-runs/README.md): the base is the
# machine's own Ubuntu 24.04 root (gputool base), the wheel index holds the
# machine's installed torch stack repacked as wheels (repack_wheels.py).
#
# Writes $OUT/e2e-<phases>.log (everything printed) and $OUT/<phase>.tar.gz
# (each step's output files).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh" # repo G B OUT PY REG NAME; step, timed, show_result
export PATH=$B:$PATH PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0} TORCH_SYMM_MEM_DISABLE_MULTICAST=${TORCH_SYMM_MEM_DISABLE_MULTICAST:-1} NVSHMEM_DISABLE_NVLS=${NVSHMEM_DISABLE_NVLS:-1}
export BUILDKIT_HOST=unix://$G/buildkitd.sock IMAGECTL_SIGNING_PASSWORD=gpu-run
mkdir -p "$OUT" "$G"
exec > >(tee -a "$OUT/e2e-$(echo "$*" | tr ' ' '-').log") 2>&1
# ref_of BUILD.json: the pushed repo@sha256 (and the size, layers on stderr).
ref_of() { "$PY" -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["ref"]); print("size %d bytes, %d layers" % (r["size"], len(r.get("layers") or [])), file=sys.stderr)' "$1"; }
save() { tar -C "$W" -czf "$OUT/$1.tar.gz" . 2>/dev/null; }

# start_build_services: the loopback registry and buildkitd, unless running.
start_build_services() {
  if ! (exec 3<>/dev/tcp/127.0.0.1/5000) 2>/dev/null; then
    setsid "$B/gputool" registry --addr $REG --dir $G/registry > $G/registry.log 2>&1 < /dev/null &
  fi
  if [ ! -S $G/buildkitd.sock ]; then
    setsid "$B/buildkitd" --root $G/buildkit --addr "$BUILDKIT_HOST" --oci-worker=true --containerd-worker=false \
      --oci-worker-snapshotter=overlayfs --oci-worker-binary="$B/runc" > $G/buildkitd.log 2>&1 < /dev/null &
  fi
  local i
  for i in $(seq 1 100); do [ -S $G/buildkitd.sock ] && (exec 3<>/dev/tcp/127.0.0.1/5000) 2>/dev/null && break; sleep 0.1; done
}

phase_setup() {
  W=$G/run/setup; mkdir -p "$W"
  step machine
  date -u; uname -a; nvidia-smi -L; nvidia-smi --query-gpu=driver_version,name,memory.total --format=csv
  env | grep -E '^(NCCL|TORCH|NVSHMEM)_' | sort
  "$PY" -c 'import sys,torch; print(sys.version.split()[0], torch.__version__, torch.version.cuda, torch.backends.cudnn.version(), torch.cuda.nccl.version(), torch.cuda.device_count(), torch.cuda.get_arch_list())'
  echo "venv: $(grep -E '^(home|version)' /opt/torch/.venv/pyvenv.cfg | tr '\n' ' ') python3 -> $(readlink -f "$PY")"
  echo "system python: $(/usr/bin/python3 --version 2>&1); pip: $(/usr/bin/python3 -m pip --version 2>&1 | head -1)"
  step "torch's Requires-Dist (the catalog row's source)"
  "$PY" -c 'import importlib.metadata as m; print("\n".join(m.requires("torch")))' | tee "$W/torch-requires-dist.txt"
  "$PY" -m pip list 2>/dev/null | grep -iE '^(torch|triton|nvidia-nccl|nvidia-cudnn|cuda-toolkit|nvidia-cuda-runtime) ' | tee "$W/pip-list-core.txt"
  df -h /tmp / | tee "$W/df.txt"

  step "unpack the carried tools into bin/"
  mkdir -p "$B"
  # The bundle travels whole in .gpu/ or, when over the device tool's 64 MiB
  # per call, in parts: an earlier call on the same warm machine copied the
  # others to /tmp/gpu-parts (docs/gpu-runs/README.md).
  for f in .gpu/*.xz /tmp/gpu-parts/*.xz; do
    [ -f "$f" ] || continue # none when the parts are .gpu/k8s*/ (k8s-e2e.sh unpack)
    n=$(basename "$f" .xz)
    xz -dc "$f" > "$B/$n" && chmod +x "$B/$n"
  done
  ls -la "$B"

  step "start the registry, buildkitd and containerd"
  start_build_services
  mkdir -p .cache && touch .cache/env
  hack/containerd.sh
  ls -la $G/buildkitd.sock; grep CONTAINERD_ADDRESS .cache/env

  step "CDI spec from the host (nvidia-ctk, the way a GPU host is set up)"
  timed cdi-generate nvidia-ctk cdi generate --nvidia-cdi-hook-path="$B/nvidia-cdi-hook" --output=/etc/cdi/nvidia.yaml
  nvidia-ctk cdi list
  cp /etc/cdi/nvidia.yaml "$W/"

  step keys
  for k in signer verifier; do
    [ -f $G/keys/$k/cosign.key ] || imagectl sign generate-key-pair --dir $G/keys/$k
  done
  save setup
}

# base_args: gputool base's arguments for the fixture base, into add[]: the
# venv's pip where the system Python has none, and the CUDA stamp.
base_args() {
  add=()
  if ! /usr/bin/python3 -c 'import pip' 2>/dev/null; then
    # The lock and the build drive the base's pip; this root has none, so
    # the fixture gets the venv's pip (the same pip the machine uses).
    add=(--add "/opt/torch/.venv/lib/python3.12/site-packages/pip=/usr/lib/python3/dist-packages/pip")
  fi
  # Stamped the way nvidia/cuda bases state their toolkit (CUDA_VERSION in
  # the config, /usr/local/cuda/version.json), with the release of the CUDA
  # runtime the machine's torch stack carries, so that verify's cuda.toolkit
  # check has a toolkit to compare (phase toolkit).
  cuda_rel=$("$PY" - <<'PYEOF'
import importlib.metadata as m, re, torch
v = ""
for d in m.distributions():
    if re.fullmatch(r"nvidia-cuda-runtime(-cu\d+)?", (d.metadata["Name"] or "").lower()):
        v = d.version
        break
print(v or torch.version.cuda)
PYEOF
)
  mkdir -p $G/cuda-stamp
  printf '{"cuda": {"name": "CUDA SDK", "version": "%s"}}\n' "$cuda_rel" > $G/cuda-stamp/version.json
  echo "base CUDA toolkit stamp: $cuda_rel"
  add+=(--add "$G/cuda-stamp=/usr/local/cuda" --env "CUDA_VERSION=$cuda_rel")
}

# repack_index: the wheel index (the installed torch stack repacked),
# served on 127.0.0.1:8000.
repack_index() {
  step "wheel index: the installed torch stack repacked as wheels (fixture)"
  rm -rf $G/index
  timed repack "$PY" "$here/repack_wheels.py" --out $G/index --index-path whl/cu130 torch torchvision torchaudio transformers pip \
    --periphery imagectl-gpu-periphery==1.0.0 | tee "$W/repack.json"
  ls -la $G/index/files | tee "$W/wheels.txt"
  if ! (exec 3<>/dev/tcp/127.0.0.1/8000) 2>/dev/null; then
    (cd $G/index && setsid "$PY" -m http.server 8000 --bind 127.0.0.1 > $G/index.log 2>&1 < /dev/null &)
    sleep 1
  fi
}

phase_build() {
  W=$G/run/build; mkdir -p "$W"
  step "base: the machine's own Ubuntu root with Python 3.12 (fixture)"
  base_args
  timed base gputool base --root / --push $REG/gpu/ubuntu-base:24.04 "${add[@]}" | tee "$W/base.ref"

  repack_index

  step "lock (pip's resolver in the base, through buildkitd)"
  rm -rf $G/images
  timed lock imagectl lock "$here/h200.hcl" --dir $G/images; rc=$?; want "lock exit" $rc 0
  LOCK=$G/images/$NAME/lock.json
  cp "$LOCK" "$W/lock.json"
  "$PY" -c 'import json,sys; l=json.load(open(sys.argv[1])); print(json.dumps(l["core"])); print(len(l["pip"]), "wheels,", sum(w.get("size",0) for w in l["pip"]), "bytes")' "$LOCK"

  step "build, zstd layers, pushed by digest, signed with lock/SBOM/provenance"
  [ -n "${LAZY_ONLY:-}" ] && echo "LAZY_ONLY: no zstd build" || timed build-zstd imagectl build --lock "$LOCK" --push --compression zstd --progress plain -o json \
    --sign --key $G/keys/signer/cosign.key > "$W/build-zstd.json" 2> "$W/build-zstd.stderr"; rc=$?; want "build exit" $rc 0
  if [ -z "${LAZY_ONLY:-}" ]; then
    tail -n 5 "$W/build-zstd.stderr"; ref_of "$W/build-zstd.json" > "$W/build-zstd.ref"; cat "$W/build-zstd.ref"
    gputool diff "$(cat "$W/build-zstd.ref")" "$(cat "$W/build-zstd.ref")" | tee "$W/size-zstd.json"
  fi
  if [ -z "${QUICK:-}" ]; then
    step "the same build, gzip layers (pull benchmark)"
    timed build-gzip imagectl build --lock "$LOCK" --push --compression gzip --progress plain -o json \
      --repo $REG/gpu/staging-gzip/$NAME > "$W/build-gzip.json" 2> "$W/build-gzip.stderr"
    tail -n 5 "$W/build-gzip.stderr"; ref_of "$W/build-gzip.json" > "$W/build-gzip.ref"; cat "$W/build-gzip.ref"
    gputool diff "$(cat "$W/build-gzip.ref")" "$(cat "$W/build-gzip.ref")" | tee "$W/size-gzip.json"
  fi
  if [ -n "${ESTARGZ:-}" ]; then
    step "the same build, eStargz layers (BuildKit's estargz export; lazy pull benchmark)"
    timed build-estargz imagectl build --lock "$LOCK" --push --compression estargz --progress plain -o json \
      --repo $REG/gpu/staging-estargz/$NAME > "$W/build-estargz.json" 2> "$W/build-estargz.stderr"; rc=$?; want "estargz build exit" $rc 0
    tail -n 5 "$W/build-estargz.stderr"; ref_of "$W/build-estargz.json" > "$W/build-estargz.ref"; cat "$W/build-estargz.ref"
  fi
  df -h /tmp | tail -n1
  cp $G/times.tsv "$W/"
  save build
}

# start_containerd DIR [TOML]: a containerd of its own under DIR (root,
# state, socket DIR/c.sock; CRI and NRI off), TOML appended to its config;
# sets cpid and returns once the socket is there.
start_containerd() {
  local dir=$1 i
  mkdir -p "$dir"
  cat > "$dir/config.toml" <<TOML
version = 3
root = "$dir/root"
state = "$dir/state"
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.cri.v1.images", "io.containerd.cri.v1.runtime", "io.containerd.podsandbox.controller.v1.podsandbox", "io.containerd.nri.v1.nri"]
[grpc]
  address = "$dir/c.sock"
[ttrpc]
  address = ""
${2:-}
TOML
  PATH=$B:$PATH setsid containerd --config "$dir/config.toml" > "$dir/log" 2>&1 < /dev/null &
  cpid=$!
  for i in $(seq 1 100); do [ -S "$dir/c.sock" ] && break; sleep 0.1; done
}

# blob_bytes: the blob bytes the registry served since it started.
blob_bytes() { "$PY" -c 'import json,urllib.request; print(json.load(urllib.request.urlopen("http://127.0.0.1:5000/_imagectl/bytes"))["blob_bytes"])'; }

# cold_verify VARIANT REF SNAPSHOTTER [verify flags]: a containerd (and
# for stargz a stargz-snapshotter) of its own, cold, then imagectl verify
# --startup through it; the registry's blob bytes at the end of the first
# step and of the whole verify go to $W/bytes-VARIANT.tsv. Both daemons
# and their state are removed after.
cold_verify() {
  local v=$1 ref=$2 snap=$3 C2=$G/cs-$1 b0 rc spid= cpid
  shift 3
  rm -rf "$C2"; mkdir -p "$C2"
  local plugin=
  if [ "$snap" = stargz ]; then
    printf 'no_background_fetch = true\n%s\n' "${STARGZ_FUSE:+$(printf '[fuse]\n%s' "$STARGZ_FUSE")}" > $C2/stargz.toml
    setsid containerd-stargz-grpc --address $C2/stargz.sock --root $C2/stargz --config $C2/stargz.toml --log-level info > $C2/stargz.log 2>&1 < /dev/null &
    spid=$!
    for i in $(seq 1 100); do [ -S $C2/stargz.sock ] && break; sleep 0.1; done
    plugin=$(printf '[proxy_plugins.stargz]\n  type = "snapshot"\n  address = "%s"' "$C2/stargz.sock")
  fi
  start_containerd "$C2" "$plugin"
  sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true
  b0=$(blob_bytes)
  local first=$W/bytes-first-$v
  rm -f "$first"
  local dpid=
  if [ -n "${DIAG:-}" ] && [ "$snap" = stargz ]; then
    mkdir -p $G/cores; cat /proc/sys/kernel/core_pattern > $G/core_pattern.old 2>/dev/null
    echo "|/usr/bin/dd of=$G/cores/core.%p.%e bs=1M status=none" > /proc/sys/kernel/core_pattern || echo "diag: core_pattern not writable"
    incont_diag > "$W/incont.log" 2>&1 &
    dpid=$!
  fi
  timed "cold-$v" timeout 400 imagectl verify "$ref" --lock "$LOCK" --runtime containerd --containerd-address $C2/c.sock --containerd-namespace cold \
    --snapshotter "$snap" --storage $G/storage --startup -o json "$@" > "$W/verify-$v.json" \
    2> >(while IFS= read -r l; do
           printf '%s\n' "$l"
           case $l in *"probe done"*firststep*) [ -f "$first" ] || blob_bytes > "$first" ;; esac
         done > "$W/verify-$v.stderr")
  rc=$?
  sleep 0.5
  local b1 bf
  b1=$(blob_bytes); bf=$(cat "$first" 2>/dev/null || echo "$b1")
  printf '%s\t%s\t%s\t%d\t%d\n' "$v" "$snap" "$rc" $((bf - b0)) $((b1 - b0)) > "$W/bytes-$v.tsv"
  grep -E 'runtime|pulled|files of the first step|verification' "$W/verify-$v.stderr" | cut -c1-300
  show_result "$W/verify-$v.json"
  if [ -n "$dpid" ]; then
    wait "$dpid"; cat "$W/incont.log"; incont_collect
    cat $G/core_pattern.old > /proc/sys/kernel/core_pattern 2>/dev/null
  fi
  if [ -n "${DIAG:-}" ] && [ "$snap" = stargz ]; then
    # The lazily mounted layers: each ptxas (torch's, which Inductor runs,
    # and triton's) read through FUSE against the host venv's, then run
    # from there on a one-kernel PTX file; and what the kernel logged.
    echo "diag: kernel $(uname -r); fuse passthrough config: ${STARGZ_FUSE:-none}"
    printf '.version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k() { ret; }\n' > "$W/k.ptx"
    local f rel host
    for f in $(find $C2/stargz -path '*site-packages/torch/bin/ptxas' -o -path '*triton/backends/nvidia/bin/ptxas' 2>/dev/null | head -4); do
      rel=${f#*/site-packages/}; host=/opt/torch/.venv/lib/python3.12/site-packages/$rel
      echo "diag: $rel size $(stat -c %s "$f") sha $(sha256sum < "$f" | cut -c1-16); host $(stat -c %s "$host" 2>/dev/null) $(sha256sum < "$host" 2>/dev/null | cut -c1-16)"
      "$f" -arch=sm_90 "$W/k.ptx" -o "$W/k.o"; echo "diag: $rel compiles k.ptx from the FUSE mount: rc=$?"
    done
    # Inductor's own PTX file (left in the storage's tmp) through the same
    # command line, from the FUSE mount and from the host venv.
    local ptx
    ptx=$(ls -t $G/storage/tmp/*.ptx 2>/dev/null | head -1)
    if [ -n "$ptx" ]; then
      echo "diag: inductor's $ptx: $(wc -c < "$ptx") bytes, $(grep -c '\.file' "$ptx") .file lines"; grep -m3 '\.file' "$ptx" | cut -c1-200
      for f in $(find $C2/stargz -path '*site-packages/torch/bin/ptxas' 2>/dev/null | head -1) /opt/torch/.venv/lib/python3.12/site-packages/torch/bin/ptxas; do
        "$f" -lineinfo -v --gpu-name=sm_90a "$ptx" -o "$W/x.o" > "$W/ptxas.out" 2>&1; echo "diag: $f on inductor's ptx: rc=$?"; tail -n 3 "$W/ptxas.out"
      done
      # The container's view by hand: overlayfs over the same FUSE layers
      # (top first), then chroot into it, then as the image's user.
      local lowers ov=$W/ovl ap=opt/venv/lib/python3.12/site-packages/torch/bin/ptxas
      lowers=$(awk -v d="$C2/stargz/" 'index($2, d) == 1 && $3 ~ /fuse/ { print $2 }' /proc/mounts | awk -F/ '{ print $(NF-1) "\t" $0 }' | sort -rn | cut -f2 | paste -sd:)
      mkdir -p $ov/up $ov/work $ov/root
      if mount -t overlay overlay -o "lowerdir=$lowers,upperdir=$ov/up,workdir=$ov/work" $ov/root; then
        mkdir -p $ov/root/tmp && cp "$ptx" $ov/root/tmp/k.ptx
        $ov/root/$ap -lineinfo -v --gpu-name=sm_90a "$ptx" -o "$W/x.o" > /dev/null 2>&1; echo "diag: overlay over FUSE, root: rc=$?"
        chroot $ov/root /$ap -lineinfo -v --gpu-name=sm_90a /tmp/k.ptx -o /tmp/k.o > /dev/null 2>&1; echo "diag: chroot into it, root: rc=$?"
        ldd $ov/root/$ap 2>&1 | head -n 8
        # The CDI hook runs ldconfig in the container's root: here too.
        chroot $ov/root /sbin/ldconfig; echo "diag: ldconfig in the overlay root: rc=$?"
        chroot $ov/root /$ap -lineinfo -v --gpu-name=sm_90a /tmp/k.ptx -o /tmp/k3.o > /dev/null 2>&1; echo "diag: chroot after ldconfig, root: rc=$?"
        chroot $ov/root /sbin/ldconfig -p | grep -E 'libstdc|libgcc_s|libm\.|libc\.|libpthread|libdl|librt' | head -n 12
        chmod 644 $ov/root/tmp/k.ptx
        chroot --userspec=1000:1000 $ov/root /$ap -lineinfo -v --gpu-name=sm_90a /tmp/k.ptx -o /tmp/k1.o > "$W/ptxas-u.out" 2>&1; echo "diag: chroot, uid 1000: rc=$?"; tail -n 2 "$W/ptxas-u.out"
        chmod 1777 $ov/root/tmp; (cd $ov/root && env -i chroot --userspec=1000:1000 $ov/root /$ap -lineinfo -v --gpu-name=sm_90a /tmp/k.ptx -o /tmp/k2.o > /dev/null 2>&1); echo "diag: chroot, uid 1000, empty env: rc=$?"
        grep -E '^(USER|UID|HOME)' $ov/root/etc/passwd | head -2; awk -F: '$3 == 1000' $ov/root/etc/passwd
        umount $ov/root
      else echo "diag: overlay mount failed (lowers: $(echo "$lowers" | tr ':' '\n' | wc -l))"; fi
      if command -v strace > /dev/null; then
        strace -f -o "$W/strace.txt" "$(find $C2/stargz -path '*site-packages/torch/bin/ptxas' | head -1)" -lineinfo -v --gpu-name=sm_90a "$ptx" -o "$W/x.o" > /dev/null 2>&1
        grep -vE 'mmap|mprotect|brk|munmap' "$W/strace.txt" | tail -n 25
      else echo "diag: no strace"; fi
    else echo "diag: no ptx file left in $G/storage/tmp"; ls $G/storage/tmp | head; fi
    dmesg 2>/dev/null | grep -iE 'segfault|ptxas|fuse|traps' | tail -n 10 || echo "diag: dmesg unreadable"
    grep -ciE 'level=(error|warning)' $C2/stargz.log; grep -iE 'level=(error|warning)' $C2/stargz.log | cut -c1-300 | sort | uniq -c | sort -rn | head -5
  fi
  kill $cpid 2>/dev/null; sleep 1
  [ -n "$spid" ] && { kill -INT $spid 2>/dev/null; sleep 2; }
  grep -E 'level=(error|fatal)' $C2/stargz.log 2>/dev/null | tail -n 5
  # FUSE mounts the snapshotter left behind would keep the state busy.
  grep " $C2/" /proc/mounts | awk '{print $2}' | sort -r | xargs -r -n1 umount -l 2>/dev/null
  rm -rf "$C2"
  return $rc
}

# incont_diag: waits for verify's compile probe (the container whose
# torch.compile runs ptxas), then, from the host: saves the container's
# mounts, limits, status and environment, and once Inductor has written a
# PTX file runs torch's ptxas on it inside the container's namespaces
# (nsenter), adding one part of the container at a time (mount namespace and
# root; all namespaces; the image's user; the container's environment; its
# cgroup), stats the PTX's .file sources there, and traces ptxas there and on
# the host (strace, when the bundle carries it). A crash is caught as a core dump
# (the kernel's core_pattern piped to dd) beside the binary, its loader and
# libc, for gdb elsewhere.
incont_diag() {
  local pid= i ap=/opt/venv/lib/python3.12/site-packages/torch/bin/ptxas cg uid gid
  local st=()
  [ -x "$B/strace" ] && st=(env LD_LIBRARY_PATH=$B "$B/strace")
  for i in $(seq 1 6000); do pid=$(pgrep -o -f '/imagectl-probes/compile.py') && break; sleep 0.05; done
  [ -n "$pid" ] || { echo "incont: no compile probe seen"; return; }
  read -r _ uid _ < <(grep '^Uid' /proc/$pid/status); read -r _ gid _ < <(grep '^Gid' /proc/$pid/status)
  cg=$(cut -d: -f3 /proc/$pid/cgroup | head -1)
  echo "incont: compile probe pid $pid uid $uid gid $gid cgroup $cg"
  cat /proc/$pid/mountinfo > "$W/incont-mountinfo.txt"; cat /proc/$pid/limits > "$W/incont-limits.txt"
  cat /proc/$pid/status > "$W/incont-status.txt"; tr '\0' '\n' < /proc/$pid/environ > "$W/incont-environ.txt"
  grep -E '^(Seccomp|CapEff|NoNewPrivs)' /proc/$pid/status | tr '\n' ' '; echo
  grep -E ' / ' "$W/incont-mountinfo.txt" | cut -c1-400
  local envv=()
  mapfile -d '' envv < /proc/$pid/environ
  chmod 1777 /proc/$pid/root/tmp # the trials as the image's user write there
  # one trial: NAME, the PTX inside the container, then how to enter.
  trial() {
    local n=$1 ptx=$2; shift 2
    timeout 60 "$@" "$ap" -lineinfo -v --gpu-name=sm_90a "$ptx" -o "/tmp/kd-$n.o" > "$W/incont-$n.out" 2>&1
    echo "incont: $n on $ptx: rc=$?"
  }
  local ns=(nsenter -t "$pid" -m -u -i -n -p -r -w)
  # the trials that need the probe's own process (its other namespaces and
  # its cgroup); the mount namespace alone is tried through keep below.
  runall() {
    local ptx=$1 sfx=$2
    trial "ns$sfx" "$ptx" "${ns[@]}" --
    trial "user$sfx" "$ptx" "${ns[@]}" -S "$uid" -G "$gid" --
    trial "env$sfx" "$ptx" "${ns[@]}" -S "$uid" -G "$gid" -- /usr/bin/env -i "${envv[@]}"
    # and in the container's cgroup, as runc would place it
    ( echo $BASHPID > "/sys/fs/cgroup$cg/cgroup.procs" 2>/dev/null || echo "incont: cgroup join failed"
      trial "cg$sfx" "$ptx" "${ns[@]}" -S "$uid" -G "$gid" -- /usr/bin/env -i "${envv[@]}" )
  }
  # A process of the host's kept in the container's mount namespace and
  # root: the later trials outlive the probe's container.
  nsenter -t "$pid" -m -r -w -- sleep 240 &
  local keep=$!
  # Inductor's own PTX, once it has written one (its tmp is the storage's).
  local ptx=
  for i in $(seq 1 1200); do
    ptx=$(ls -t /proc/$pid/root/tmp/*.ptx /proc/$pid/root/tmp/*/*.ptx $G/storage/tmp/*.ptx 2>/dev/null | head -1)
    [ -n "$ptx" ] || { kill -0 "$pid" 2>/dev/null || break; sleep 0.1; continue; }
    break
  done
  if [ -n "$ptx" ]; then
    echo "incont: inductor's $ptx $(wc -c < "$ptx") bytes"
    cp "$ptx" /proc/$keep/root/tmp/ki.ptx && chmod 666 /proc/$keep/root/tmp/ki.ptx
    # ptxas stats the PTX's .file sources (-lineinfo): what each is in the
    # container, then the same PTX with them pointing nowhere.
    local f
    for f in $(grep -o '\.file[[:space:]]*[0-9]* "[^"]*"' "$ptx" | sed 's/.*"\(.*\)"/\1/'); do
      echo "incont: in the container: $(nsenter -t "$keep" -m -r -- stat -c '%n size %s mtime %Y ino %i dev %d %F' "$f" 2>&1)"
      echo "incont: on the host:      $(stat -c '%n size %s mtime %Y ino %i dev %d %F' "$f" 2>&1)"
    done
    sed 's|\(\.file[[:space:]]*[0-9]*\) "[^"]*"|\1 "/nonexistent.py"|' "$ptx" > /proc/$keep/root/tmp/kn.ptx
    if [ ${#st[@]} -gt 0 ]; then
      "${st[@]}" -f -v -s 300 -o "$W/ptxas-ns.strace" nsenter -t "$keep" -m -r -w -- "$ap" -lineinfo -v --gpu-name=sm_90a /tmp/ki.ptx -o /tmp/kd-st.o > /dev/null 2>&1
      echo "incont: ptxas traced in the container's mount namespace: rc=$?"
      "${st[@]}" -f -v -s 300 -o "$W/ptxas-host.strace" /opt/torch/.venv/lib/python3.12/site-packages/torch/bin/ptxas -lineinfo -v --gpu-name=sm_90a "$ptx" -o "$W/kh.o" > /dev/null 2>&1
      echo "incont: ptxas traced on the host: rc=$?"
      echo "incont: the last calls in the container's mount namespace:"
      grep -vE 'mmap|mprotect|munmap|brk\(' "$W/ptxas-ns.strace" | tail -n 25 | cut -c1-400
    fi
    trial mnt-nofile /tmp/kn.ptx nsenter -t "$keep" -m -r -w --
    trial mnt-ind /tmp/ki.ptx nsenter -t "$keep" -m -r -w --
    timeout 60 nsenter -t "$keep" -m -r -w -- "$ap" -v --gpu-name=sm_90a /tmp/ki.ptx -o /tmp/knl.o > "$W/incont-nolineinfo.out" 2>&1
    echo "incont: mnt-ind without -lineinfo: rc=$?"
    kill -0 "$pid" 2>/dev/null && runall /tmp/ki.ptx -ind
  else echo "incont: no inductor PTX seen"; fi
  kill "$keep" 2>/dev/null
}

# incont_collect: the core dumps incont_diag caught, with the binary and the
# libraries gdb needs to read them.
incont_collect() {
  ls -la $G/cores 2>/dev/null
  local c
  c=$(ls -S $G/cores/core.* 2>/dev/null | head -1)
  if [ -n "$c" ]; then
    xz -T0 -6 -c "$c" > "$OUT/ptxas-core.xz"
    xz -T0 -6 -c /opt/torch/.venv/lib/python3.12/site-packages/torch/bin/ptxas > "$OUT/ptxas.xz"
    tar -C / -cJhf "$OUT/ptxas-libs.tar.xz" lib/x86_64-linux-gnu/libc.so.6 lib/x86_64-linux-gnu/libm.so.6 lib/x86_64-linux-gnu/libgcc_s.so.1 lib64/ld-linux-x86-64.so.2 2>/dev/null
    ls -la "$OUT"/ptxas*
  fi
}

# race_diag REF: the lazily mounted image's ptxas (torch's, which Inductor
# runs in parallel while autotuning), executed by 8 processes at once from
# the host while its file is still cold (right after verify's first step,
# before compile.cache), on Inductor's PTX file from an earlier run.
race_diag() {
  local ref=$1 C2=$G/cs-race spid cpid vpid f j ptx
  ptx=$(ls -t $G/storage/tmp/*.ptx 2>/dev/null | head -1)
  [ -n "$ptx" ] || { echo "race: no PTX file in $G/storage/tmp"; return; }
  rm -rf "$C2"; mkdir -p "$C2"
  printf 'no_background_fetch = true\n' > $C2/stargz.toml
  setsid containerd-stargz-grpc --address $C2/stargz.sock --root $C2/stargz --config $C2/stargz.toml --log-level info > $C2/stargz.log 2>&1 < /dev/null &
  spid=$!
  for j in $(seq 1 100); do [ -S $C2/stargz.sock ] && break; sleep 0.1; done
  start_containerd "$C2" "$(printf '[proxy_plugins.stargz]\n  type = "snapshot"\n  address = "%s"' "$C2/stargz.sock")"
  imagectl verify "$ref" --lock "$LOCK" --runtime containerd --containerd-address $C2/c.sock --containerd-namespace race \
    --snapshotter stargz --storage $G/storage --startup -o json > "$W/race-verify.json" 2> "$W/race-verify.stderr" &
  vpid=$!
  for j in $(seq 1 900); do grep -q 'probe done.*firststep' "$W/race-verify.stderr" && break; sleep 0.1; done
  f=$(find $C2/stargz -path '*site-packages/torch/bin/ptxas' 2>/dev/null | head -1)
  echo "race: first step done after $((j / 10)) s; $f"
  local pids=()
  for j in 1 2 3 4 5 6 7 8; do
    ( "$f" -lineinfo -v --gpu-name=sm_90a "$ptx" -o "$W/race$j.o" > "$W/race$j.out" 2>&1; echo "race: ptxas $j rc=$?" ) &
    pids+=($!)
  done
  wait "${pids[@]}" # not the daemons: they are jobs of this shell too
  echo "race: sha afterwards $(sha256sum < "$f" | cut -c1-16)"
  wait $vpid; echo "race: verify rc=$?"
  "$PY" -c 'import json,sys; r=json.load(open(sys.argv[1])); print([ (c["name"], c["status"]) for c in r["checks"] if c["name"] in ("compile.cache","startup.first_step")])' "$W/race-verify.json" 2>&1
  dmesg | grep segfault | tail -n 10
  kill $cpid 2>/dev/null; sleep 1; kill -INT $spid 2>/dev/null; sleep 2
  grep " $C2/" /proc/mounts | awk '{print $2}' | sort -r | xargs -r -n1 umount -l 2>/dev/null
  rm -rf "$C2"
}

# phase_coldstart (issue 33): from a cold containerd to the end of the
# first CUDA matmul in the torch image, gzip and zstd layers pulled whole,
# eStargz layers pulled lazily by stargz-snapshotter, without and then with
# the files the lazy run's first step took put first (imagectl build
# --prioritized-files from verify --startup-files); every variant through
# the whole verify, which must pass.
phase_coldstart() {
  W=$G/run/coldstart; mkdir -p "$W"
  LOCK=$G/images/$NAME/lock.json
  mkdir -p $G/storage && touch $G/storage/.ready
  start_build_services
  hack/down.sh >/dev/null 2>&1 # verify's containerd: its cache would make the pulls warm
  rm -rf .cache/containerd/root
  printf 'variant\tsnapshotter\tverify_rc\tbytes_first_step\tbytes_verify\n' > "$W/bytes.tsv"
  local v ref
  for v in ${COLD_VARIANTS:-estargz zstd gzip}; do
    ref=$(cat $G/run/build/build-$v.ref 2>/dev/null) || { want "$v image built" missing present; continue; }
    snap=overlayfs
    step "cold start: $v layers ($ref)"
    case $v in
      estargz)
        step "cold start: $v layers, lazily (stargz-snapshotter), recording the first step's files"
        cold_verify estargz-lazy "$ref" stargz --startup-files "$W/startup-files.txt"; want "estargz lazy verify exit" $? 0
        cat "$W/bytes-estargz-lazy.tsv" >> "$W/bytes.tsv"
        check_status "$W/verify-estargz-lazy.json" startup.first_step pass
        wc -l "$W/startup-files.txt"
        step "rebuild eStargz with the recorded files first"
        timed build-estargz-prio imagectl build --lock "$LOCK" --push --compression estargz --prioritized-files "$W/startup-files.txt" \
          --progress plain -o json --repo $REG/gpu/staging-estargz/$NAME > "$W/build-estargz-prio.json" 2> "$W/build-estargz-prio.stderr"
        rc=$?; want "estargz prioritized build exit" $rc 0
        grep -E 'prioritized|error' "$W/build-estargz-prio.stderr" | cut -c1-300
        ref_of "$W/build-estargz-prio.json" > "$W/build-estargz-prio.ref"
        step "cold start: eStargz with priorities, lazily"
        cold_verify estargz-prio "$(cat "$W/build-estargz-prio.ref")" stargz; want "estargz prioritized lazy verify exit" $? 0
        cat "$W/bytes-estargz-prio.tsv" >> "$W/bytes.tsv"
        check_status "$W/verify-estargz-prio.json" startup.first_step pass
        [ -n "${NO_FULL:-}" ] && continue
        step "cold start: $v layers pulled whole (overlayfs): what eStargz costs a runtime without the snapshotter"
        cold_verify estargz-full "$ref" overlayfs; want "estargz full pull verify exit" $? 0
        cat "$W/bytes-estargz-full.tsv" >> "$W/bytes.tsv"
        ;;
      *)
        cold_verify "$v" "$ref" overlayfs; want "$v verify exit" $? 0
        cat "$W/bytes-$v.tsv" >> "$W/bytes.tsv"
        check_status "$W/verify-$v.json" startup.first_step pass
        ;;
    esac
  done
  step "cold start summary (seconds from the runtime's first call to the end of the first CUDA matmul)"
  "$PY" - "$W" <<'PYEOF' | tee "$W/summary.tsv"
import csv, glob, json, os, sys
w = sys.argv[1]
rows = {r["variant"]: r for r in csv.DictReader(open(os.path.join(w, "bytes.tsv")), delimiter="\t")}
print("variant\tsnapshotter\tfirst_step_s\tpull_s\timport_s\tstep_s\tbytes_first_step\tbytes_verify\tverify_passed")
for v, r in rows.items():
    try:
        res = json.load(open(os.path.join(w, "verify-%s.json" % v)))
    except Exception as e:
        print("%s\t%s\tno result: %s" % (v, r["snapshotter"], e)); continue
    s = res.get("startup") or {}
    print("%s\t%s\t%.2f\t%.2f\t%.2f\t%.2f\t%s\t%s\t%s" % (v, r["snapshotter"], s.get("seconds", -1), s.get("pull_seconds", -1),
          s.get("import_seconds", -1), s.get("step_seconds", -1), r["bytes_first_step"], r["bytes_verify"], res.get("passed")))
PYEOF
  cp $G/times.tsv "$W/"
  save coldstart
}

# verify_ctr TAG LOCK [flags]: verify the zstd image through containerd.
verify_ctr() {
  local tag=$1 lock=$2
  shift 2
  timed "verify-$tag" imagectl verify "$REF" --lock "$lock" --runtime containerd --storage $G/storage -o json "$@" \
    > "$W/verify-$tag.json" 2> "$W/verify-$tag.stderr"
  local rc=$?
  grep -E 'runtime|pulled|probe container|signed|not signing|verification' "$W/verify-$tag.stderr" | cut -c1-400
  show_result "$W/verify-$tag.json"
  return $rc
}

phase_verify() {
  W=$G/run/verify; mkdir -p "$W"
  LOCK=$G/images/$NAME/lock.json
  REF=$(cat $G/run/build/build-zstd.ref)
  mkdir -p $G/storage && touch $G/storage/.ready

  step "verify through containerd + CDI on the H200, cold (pull + unpack), signed"
  verify_ctr containerd "$LOCK" --sign --key $G/keys/verifier/cosign.key; rc=$?; want "cold verify exit" $rc 0
  # The torch family and the pip guard, inside the image on the GPU.
  for c in torch.version torchvision.version torchaudio.version torchvision.cuda_op pip.constraints cuda.available; do
    check_status "$W/verify-containerd.json" $c pass
  done
  if [ -n "${MINIMAL:-}" ]; then
    echo "MINIMAL: no warm verify, no in-place baseline, no bare all-reduce (device time)"
  else
  step "verify again, image in containerd, --gpu-count 1 (N = this machine's GPUs)"
  verify_ctr containerd-warm "$LOCK" --gpu-count 1; rc=$?; want "warm verify exit" $rc 0

  step "in-place on the host, same probes (baseline for the ratio)"
  mkdir -p "$W/locks" /var/tmp/imagectl-storage /tmp/imagectl-storage
  mountpoint -q /tmp/imagectl-storage || mount --bind /var/tmp/imagectl-storage /tmp/imagectl-storage
  gputool mklock -python "$PY" -out "$W/locks" -min-gpus 1 -storage /tmp/imagectl-storage
  HOST=$W/locks/$NAME.lock.json
  "$PY" -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["runtime"]))' "$HOST" > "$W/runtime-host.json"
  SI=localhost/gpu-machine-env@sha256:$(sha256sum "$HOST" | cut -d' ' -f1)
  timed verify-inplace env IMAGECTL_RUNTIME_CONFIG="$W/runtime-host.json" IMAGECTL_IMAGE_DIGEST="${SI#*@}" imagectl-init -- \
    imagectl verify "$SI" --lock "$HOST" --runtime in-place --python "$PY" -o json > "$W/verify-inplace.json" 2> "$W/verify-inplace.stderr"
  echo "rc=$?"; grep -E 'runtime|verification' "$W/verify-inplace.stderr" | cut -c1-300
  "$PY" -c 'import json,sys; r=json.load(open(sys.argv[1])); print("passed=%s duration=%s proof=%s" % (r["passed"], r["duration"], r.get("proof")))' "$W/verify-inplace.json"

  step "bare torch all_reduce on the host, same size (issue 18 baseline; one GPU)"
  "$PY" -m torch.distributed.run --nproc-per-node "$("$PY" -c 'import torch;print(torch.cuda.device_count())')" \
    "$here/bare_allreduce.py" --bytes 268435456 --iters 20 --warmup 5 2>&1 | grep bare_allreduce | tee "$W/bare-allreduce.jsonl"

  fi

  step "negative: the same image against locks whose NCCL, cuDNN, torch or driver floor differ (exit 4, both versions named)"
  gputool drift "$LOCK" "$W/drift"
  for d in nccl cudnn torch driver-floor; do
    [ -n "${QUICK:-}" ] && [ $d != nccl ] && continue
    verify_ctr "drift-$d" "$W/drift/$d.lock.json"; rc=$?; want "drift $d exit" $rc 4
  done

  step "promote (gates, --require-container-runtime) and pin"
  rel=$G/images/$NAME/releases.json
  rm -f "$rel"
  gputool record "$rel" $NAME $REG/gpu/$NAME "$REF" $NAME-2026.12 2026-12 "$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["digest"])' "$LOCK")" $NAME
  timed promote imagectl promote "$rel" --confirm --key $G/keys/signer/cosign.pub --verifier-key $G/keys/verifier/cosign.pub \
    --require-container-runtime > "$W/promote.txt" 2>&1; rc=$?; cat "$W/promote.txt"; want "promote exit" $rc 0
  timed pin imagectl pin $REG/gpu/$NAME:$NAME --key $G/keys/signer/cosign.pub --verifier-key $G/keys/verifier/cosign.pub \
    --require-container-runtime > "$W/pin.txt"; rc=$?; cat "$W/pin.txt"; want "pin exit" $rc 0
  cp "$rel" "$W/"

  cp $G/times.tsv "$W/"
  save verify
}

# phase_toolkit: verify's cuda.toolkit check on the torch image: against
# its own lock (core.cuda 13.0, the base's stamp 13.0.x: pass, exit 0) and
# against a copy of the lock with core.cuda 12.8 (fail naming both, exit 4).
phase_toolkit() {
  W=$G/run/toolkit; mkdir -p "$W"
  LOCK=$G/images/$NAME/lock.json
  REF=$(cat $G/run/build/build-zstd.ref)
  mkdir -p $G/storage && touch $G/storage/.ready
  gputool drift "$LOCK" "$W/drift"
  step "cuda.toolkit: the torch image against its own lock (want pass, exit 0)"
  verify_ctr toolkit-own "$LOCK"; rc_own=$?; want "own lock exit" $rc_own 0
  step "cuda.toolkit: the same image against a lock with core.cuda 12.8 (want fail naming both, exit 4)"
  verify_ctr toolkit-12.8 "$W/drift/cuda-toolkit.lock.json"; rc_drift=$?; want "core.cuda 12.8 exit" $rc_drift 4
  printf 'own\t%s\ncuda-12.8\t%s\n' "$rc_own" "$rc_drift" > "$W/rc.tsv"
  cp $G/times.tsv "$W/"
  save toolkit
}

# phase_cudatwice: issue 25's "CUDA shipped twice", measured with real
# libraries: the torch 2.11 cu130 image (whose wheels bring every CUDA
# library) on two bases made of this machine's CUDA 13.0 debs the way
# nvidia/cuda's flavours are: "base" (cuda-cudart and cuda-compat only) and
# "runtime" (+ cuda-libraries-13-0's libraries, libnpp, cuda-nvtx,
# libcusparse, libcublas and libnccl2, as NVIDIA's runtime Dockerfile
# installs). Both leave out the cuDNN and NCCL debs' files in /usr/lib
# except where the flavour has them. Needs only the registry, buildkitd
# and the index (started here when missing); prints each image's size and
# what imagectl build reports held twice.
phase_cudatwice() {
  W=$G/run/cudatwice; mkdir -p "$W"
  start_build_services
  [ -d $G/index/files ] || repack_index
  step "CUDA shipped twice: the torch image on a -base and a -runtime flavour of the machine's CUDA 13.0 debs"
  local libs rt=() bs=() drop=() f d
  libs=$(dpkg-query -W -f '${Depends}' cuda-libraries-13-0 | tr ',' '\n' | sed 's/(.*//; s/ //g')
  echo "cuda-libraries-13-0 depends: $(echo $libs)"
  for d in cuda-cudart-13-0 cuda-compat-13-0; do bs+=(--deb "$d"); rt+=(--deb "$d"); done
  for d in $libs libnpp-13-0 cuda-nvtx-13-0 libcusparse-13-0 libcublas-13-0 libnccl2; do
    case $(dpkg-query -W -f '${db:Status-Abbrev}' "$d" 2>/dev/null) in [ih]i*) rt+=(--deb "$d") ;; esac
  done
  # Files of CUDA debs outside /usr/local (cuDNN, NCCL and their -dev) go
  # unless the flavour has them. Installed means "ii" or "hi": nvidia/cuda
  # images apt-mark hold their CUDA debs (libcublas, libnccl2, cuDNN).
  for d in $(dpkg-query -W -f '${db:Status-Abbrev} ${Package}\n' 'libcudnn*' 'libnccl*' 2>/dev/null | awk '$1 ~ /^[ih]i$/ { print $2 }'); do
    case $d in libnccl2) bs+=(--drop-deb "$d") ;; *) bs+=(--drop-deb "$d"); rt+=(--drop-deb "$d") ;; esac
  done
  base_args
  printf 'flavour\tbase_zstd_bytes\timage_bytes\tlibraries_twice\tdeb_bytes_twice\twheel_bytes_twice\n' > "$W/sizes.tsv"
  for f in base runtime; do
    local args=("${bs[@]}")
    [ $f = runtime ] && args=("${rt[@]}")
    echo "$f: gputool base ${args[*]}"
    timed "base-$f" gputool base --root / --push $REG/gpu/ubuntu-cuda-$f:24.04 "${add[@]}" "${args[@]}" 2> "$W/base-$f.stderr" | tee "$W/base-$f.ref"
    cat "$W/base-$f.stderr"
    rm -rf $G/twice-$f
    timed "lock-$f" imagectl lock "$here/h200.hcl" --var base_repo=gpu/ubuntu-cuda-$f --dir $G/twice-$f 2> "$W/lock-$f.stderr" || { tail -n 20 "$W/lock-$f.stderr"; continue; }
    timed "build-$f" imagectl build --lock $G/twice-$f/$NAME/lock.json --push --compression zstd --progress plain -o json \
      --repo $REG/gpu/twice-$f/$NAME > "$W/build-$f.json" 2> "$W/build-$f.stderr" || { tail -n 20 "$W/build-$f.stderr"; continue; }
    grep 'shipped twice' "$W/build-$f.stderr" | cut -c1-400
    "$PY" - "$f" "$W/base-$f.ref" "$W/build-$f.json" >> "$W/sizes.tsv" <<'PYEOF'
import json, sys, urllib.request
f, baseref, build = sys.argv[1], open(sys.argv[2]).read().strip(), json.load(open(sys.argv[3]))
repo, dig = baseref.split("@")
host, path = repo.split("/", 1)
req = urllib.request.Request("http://%s/v2/%s/manifests/%s" % (host, path, dig), headers={"Accept": "application/vnd.oci.image.manifest.v1+json"})
m = json.load(urllib.request.urlopen(req))
dups = build.get("cuda_duplicates") or []
print("%s\t%d\t%d\t%d\t%d\t%d" % (f, sum(l["size"] for l in m["layers"]), build["size"], len(dups),
      sum(d["deb"]["bytes"] for d in dups), sum(d["wheel"]["bytes"] for d in dups)))
PYEOF
  done
  step "sizes (bytes; image = manifest + config + zstd layers, as imagectl build -o json reports)"
  column -t "$W/sizes.tsv" 2>/dev/null || cat "$W/sizes.tsv"
  cp $G/times.tsv "$W/"
  save cudatwice
}

# phase_unpack (issue 33, item 3): the zstd image cold through a fresh
# containerd, its layers unpacked one at a time (--unpack-concurrency 1,
# containerd's sequential unpack) and then in parallel (the default); both
# verifications must pass.
phase_unpack() {
  W=$G/run/unpack; mkdir -p "$W"
  LOCK=$G/images/$NAME/lock.json
  mkdir -p $G/storage && touch $G/storage/.ready
  start_build_services
  hack/down.sh >/dev/null 2>&1
  local ref n
  ref=$(cat $G/run/build/build-zstd.ref 2>/dev/null) || { want "zstd image built" missing present; return; }
  for n in 1 0; do
    step "cold start: zstd layers, unpack concurrency ${n/#0/default}"
    if [ $n = 1 ]; then
      cold_verify zstd-seq "$ref" overlayfs --unpack-concurrency 1; want "zstd sequential unpack verify exit" $? 0
    else
      cold_verify zstd-par "$ref" overlayfs; want "zstd parallel unpack verify exit" $? 0
    fi
  done
  grep -h 'pulled and unpacked' "$W"/verify-zstd-*.stderr | cut -c1-300
  cp $G/times.tsv "$W/"
  save unpack
}

phase_bench() {
  W=$G/run/bench; mkdir -p "$W"
  REF=$(cat $G/run/build/build-zstd.ref)
  if [ -z "${QUICK:-}" ]; then
    step "pull + unpack into a fresh containerd: gzip vs zstd layers"
    # The disk (64 GiB free) holds buildkitd's cache, the registry and one
    # unpacked image at a time: verify's containerd goes first, then each
    # measurement gets a containerd of its own, removed after it.
    df -h /tmp | tail -n1
    hack/down.sh
    rm -rf .cache/containerd/root
    GZ=$(cat $G/run/build/build-gzip.ref)
    for run in gzip:$GZ zstd:$REF; do
      c=${run%%:*} C2=$G/ctr-$c
      start_containerd "$C2"
      gputool pull --address $C2/c.sock --namespace "$c" "${run#*:}" | tee -a "$W/pull.jsonl"
      df -h /tmp | tail -n1
      kill $cpid; sleep 1; rm -rf $C2
    done

    step "periphery-only update: a newer periphery wheel, lock upgrade, rebuild"
    "$PY" "$here/repack_wheels.py" --out $G/index --only-periphery --periphery imagectl-gpu-periphery==1.1.0
    rm -rf $G/images2 && cp -r $G/images $G/images2
    timed lock-upgrade imagectl lock upgrade "$here/h200.hcl" --images $G/images2 2>&1 | tee "$W/upgrade.txt"
    timed build-periphery imagectl build --lock $G/images2/$NAME/lock.json --push --compression zstd --progress plain -o json \
      > "$W/build-periphery.json" 2> "$W/build-periphery.stderr"
    tail -n 3 "$W/build-periphery.stderr"; ref_of "$W/build-periphery.json" > "$W/build-periphery.ref"
    gputool diff "$REF" "$(cat "$W/build-periphery.ref")" | tee "$W/periphery-diff.json"
  fi
  cp $G/times.tsv "$W/"
  save bench
}

for p in "$@"; do
  # CONTAINERD_ADDRESS, which hack/containerd.sh wrote
  [ -f .cache/env ] && . .cache/env
  case $p in
    setup) phase_setup ;;
    build) phase_build ;;
    verify) phase_verify ;;
    toolkit) phase_toolkit ;;
    bench) phase_bench ;;
    cudatwice) phase_cudatwice ;;
    coldstart) phase_coldstart ;;
    unpack) phase_unpack ;;
    race) W=$G/run/race; mkdir -p "$W"; LOCK=$G/images/$NAME/lock.json; start_build_services
      race_diag "$(cat $G/run/build/build-estargz.ref)"; save race ;;
    lazydiag) # the eStargz image lazily, with DIAG's checks (prioritized when a coldstart made one)
      W=$G/run/lazydiag; mkdir -p "$W"; LOCK=$G/images/$NAME/lock.json
      mkdir -p $G/storage && touch $G/storage/.ready
      start_build_services
      ref=$(cat $G/run/coldstart/build-estargz-prio.ref 2>/dev/null || cat $G/run/build/build-estargz.ref)
      DIAG=1 cold_verify diag "$ref" stargz; echo "lazydiag verify rc=$?"
      save lazydiag ;;
    *) echo "unknown phase $p"; FAILED=$((FAILED + 1)) ;;
  esac
done
step done
wants_met

#!/usr/bin/env bash
# Installs the Debian packages the tests and the demo need, when missing.
set -euo pipefail
pkgs=(runc debootstrap debian-archive-keyring tini podman python3 python3-venv python3-pip-whl ca-certificates curl iproute2 uidmap)
pkgs+=(openssh-client) # ssh-keygen: the init's sshd host key tests
pkgs+=(qemu-user-static) # linux/arm64 lock and build steps under emulation (hack/binfmt.sh)
pkgs+=(containernetworking-plugins) # the local Kubernetes pod network: bridge, host-local, loopback (hack/k8s.sh)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

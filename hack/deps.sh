#!/usr/bin/env bash
# Installs the Debian packages the tests and the demo need, when missing.
#   hack/deps.sh        everything `make test` needs
#   hack/deps.sh demo   only what `make demo` needs
set -euo pipefail
# The demo: buildkitd's runc, the base (debootstrap), the run through podman,
# the wheel index's pip wheel, demo.sh's JSON reading (python3).
pkgs=(runc debootstrap debian-archive-keyring podman uidmap python3 python3-pip-whl ca-certificates curl)
if [ "${1:-}" != demo ]; then
  pkgs+=(tini python3-venv iproute2)
  pkgs+=(openssh-client) # ssh-keygen: the init's sshd host key tests
  # the real sshd and Jupyter the init supervises (TestServicesAlone)
  pkgs+=(openssh-server jupyter-notebook python3-jupyter-server)
  pkgs+=(qemu-user-static) # linux/arm64 lock and build steps under emulation (hack/binfmt.sh)
  pkgs+=(containernetworking-plugins) # the local Kubernetes pod network: bridge, host-local, loopback (hack/k8s.sh)
  pkgs+=(chromium fonts-dejavu-core) # the catalog site rendered headless in the end-to-end suite (internal/testenv/chromium.go)
fi
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

#!/usr/bin/env bash
# make demo: the whole pipeline on the embedded demo spec (specs/demo.hcl).
# Installs and builds only what the demo uses (hack/deps.sh demo, hack/tools.sh
# demo, make build; the Debian base's debootstrap runs while they compile),
# brings up buildkitd, the registry, the local Debian base and the wheel
# index (hack/up.sh demo), runs `imagectl release` with a throwaway key pair,
# runs the image once through its init, prints how to pin the digest, and
# stops what it started. A second run is fast: tools, base, lock and build
# cache are kept under bin/ and .cache/; signing and verification resume.
#
# IMAGECTL_DEMO_PRIVATE=1 runs it against the private pair `make up` also
# starts (hack/private.sh): the registry behind htpasswd over TLS and the
# wheel index behind basic auth over TLS, with the logins from a Docker
# config and a netrc and the CA from --ca-file, as a platform team's CI does.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false

# Stop only what this run started; KEEP_UP=1 leaves it running for a look around.
started=
hack/up.sh status demo >/dev/null 2>&1 || started=1
down_done=
down() { [ -n "$down_done" ] || [ -z "$started" ] || [ -n "${KEEP_UP:-}" ] || { down_done=1; hack/down.sh; }; }
trap down EXIT
trap 'exit 130' INT TERM

step() { printf '\n\033[1m== %s\033[0m\n' "$*" >&2; }

step "set-up: Debian packages, tools, imagectl (cold: ~11 min on 2 cores, then cached)"
t0=$(date +%s)
hack/deps.sh demo
# debootstrap (network and disk) while the tools and imagectl compile (CPU).
base_log=.cache/logs/base-rootfs.log
mkdir -p .cache/logs
hack/base.sh rootfs > "$base_log" 2>&1 &
base_pid=$!
hack/tools.sh demo
"${MAKE:-make}" --no-print-directory build
wait "$base_pid" || { tail -n 20 "$base_log" >&2; echo "demo: the Debian base failed; log in $base_log" >&2; exit 1; }
echo "demo: set-up took $(( $(date +%s) - t0 ))s" >&2

step "services: buildkitd, registry, Debian base, wheel index (hack/up.sh demo)"
hack/up.sh demo
# shellcheck disable=SC1091
. .cache/env

demo=.cache/demo
registry=$IMAGECTL_REGISTRY
if [ -n "${IMAGECTL_DEMO_PRIVATE:-}" ]; then
  step "private: $IMAGECTL_PRIVATE_REGISTRY (htpasswd, TLS) and $IMAGECTL_PRIVATE_INDEX (basic auth, TLS)"
  demo=.cache/demo-private
  registry=$IMAGECTL_PRIVATE_REGISTRY
  export DOCKER_CONFIG=$IMAGECTL_PRIVATE_DOCKER_CONFIG NETRC=$IMAGECTL_PRIVATE_NETRC IMAGECTL_CA_FILE=$IMAGECTL_PRIVATE_CA
  export IMAGECTL_VAR_registry=$registry IMAGECTL_VAR_wheel_index=$IMAGECTL_PRIVATE_INDEX
  # The base, copied into the private registry with the login.
  SSL_CERT_FILE=.cache/private/ca-bundle.pem bin/crane copy "$IMAGECTL_BASE" "$registry/imagectl/debian-base:bookworm" 2>/dev/null
fi
images=$demo/images
keys=$demo/keys
mkdir -p "$images" "$keys"
# A throwaway key pair for signing and one for the verifier. Real platforms
# keep theirs in a KMS (--kms) or a secret store.
export IMAGECTL_SIGNING_PASSWORD=imagectl-demo
for k in signer verifier; do
  [ -f "$keys/$k/cosign.key" ] || bin/imagectl sign generate-key-pair --dir "$keys/$k" >&2
done

step "lint specs/demo.hcl"
bin/imagectl lint specs/demo.hcl

# A lock left by an earlier run whose spec has changed since is re-resolved;
# a missing one is resolved by release --lock-missing.
if [ -f "$images/demo/lock.json" ]; then
  rc=0
  bin/imagectl lock check specs/demo.hcl --image demo --images "$images" || rc=$?
  case $rc in
    0) ;;
    3) step "the demo spec changed since its lock: re-locking"
       bin/imagectl lock specs/demo.hcl --image demo --dir "$images" ;;
    *) exit "$rc" ;;
  esac
fi

step "release: lock check -> build -> sign + attest -> verify -> promote"
bin/imagectl release specs/demo.hcl --image demo --images-dir "$images" --lock-missing \
  --key "$keys/signer/cosign.key" --verifier-key "$keys/verifier/cosign.key" \
  --init bin/imagectl-init --metrics-file "$demo/metrics.prom" -o json > "$demo/release.json"
ref=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[0]["reference"])' "$demo/release.json")
tag=$registry/imagectl/demo:demo

step "pin $tag (checks the signature, the lock and the verification attestations)"
pinned=$(bin/imagectl pin "$tag" --images "$images" --key "$keys/signer/cosign.pub" --verifier-key "$keys/verifier/cosign.pub")
echo "$pinned"
[ "$pinned" = "$ref" ] || { echo "demo: pin gave $pinned, release promoted $ref" >&2; exit 1; }

step "run the released image once, through its init (podman)"
storage=$demo/storage
mkdir -p "$storage" && touch "$storage/.ready"
auth_env=()
[ -n "${DOCKER_CONFIG:-}" ] && auth_env=("REGISTRY_AUTH_FILE=$DOCKER_CONFIG/config.json")
env "${auth_env[@]}" podman run --rm --tls-verify=false --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 \
  --shm-size=1g -v "$PWD/$storage:/storage" "$pinned" \
  sh -c 'echo "TMPDIR=$TMPDIR HF_HOME=$HF_HOME"; jq --version; python -c "import demo_util, sys; print(\"python\", sys.version.split()[0], \"demo_util ok\")"'

cat <<EOT

== done
  release record   $images/demo/releases.json
  changelog        $(ls "$images"/demo/changelog-*.md | tail -n1)
  lock             $images/demo/lock.json
  metrics          $demo/metrics.prom
  keys (throwaway) $keys/{signer,verifier}/cosign.{key,pub}  password: \$IMAGECTL_SIGNING_PASSWORD=imagectl-demo
  pin it           $pinned
  check it with the stock cosign CLI (bin/cosign, v2.6.5; the demo does not build it: hack/tools.sh does):
    bin/cosign verify --key $keys/signer/cosign.pub --insecure-ignore-tlog ${IMAGECTL_CA_FILE:+--registry-cacert $IMAGECTL_CA_FILE }$pinned
    bin/cosign verify-attestation --key $keys/verifier/cosign.pub --insecure-ignore-tlog ${IMAGECTL_CA_FILE:+--registry-cacert $IMAGECTL_CA_FILE }\\
      --type https://imagectl.dev/attestations/verification/v1 $pinned
    bin/cosign verify-attestation --key $keys/signer/cosign.pub --insecure-ignore-tlog ${IMAGECTL_CA_FILE:+--registry-cacert $IMAGECTL_CA_FILE }\\
      --type cyclonedx $pinned   # the CycloneDX SBOM (--type spdxjson: the SPDX one)
  (services this run started are stopped now unless KEEP_UP=1; \`make up\` starts them again)
EOT

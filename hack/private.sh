# shellcheck shell=bash
# Sourced by hack/up.sh, before buildkitd starts (it uses up.sh's alive,
# start, wait_for and pick_port): the private services a platform team
# really has, on loopback.
#
#   - a CA made at the first start-up and a server certificate it signs
#     for 127.0.0.1, ::1 and localhost (hack/pki), and a random password;
#   - the distribution registry behind htpasswd (bcrypt) over TLS;
#   - the wheel index (hack/wheelindex) behind basic auth over TLS;
#   - the credentials as a platform team hands them to CI: a Docker config
#     (.cache/private/docker/config.json) and a netrc (.cache/private/netrc);
#   - buildkitd's side: .cache/private/buildkitd.toml names the registry's CA
#     ([registry."HOST"] ca), and .cache/private/ca-bundle.pem (the system
#     bundle plus the CA) is buildkitd's SSL_CERT_FILE for HTTP sources.
#
# Writes .cache/env.d/private.env (export lines that up.sh copies into .cache/env).
# hack/down.sh stops the two servers like every other (PIDs in .cache/pids).
# Nothing secret is printed.

priv=$cache/private
mkdir -p "$priv/registry" "$priv/docker"
chmod 700 "$priv"

for tool in pki wheelindex; do
  if [ ! -x "$root/bin/$tool" ] || [ -n "$(find "hack/$tool" internal/wheelhouse internal/atomicfile -newer "$root/bin/$tool" -name '*.go' | head -n1)" ]; then
    go build -o "$root/bin/$tool" "./hack/$tool"
  fi
done
"$root/bin/pki" "$priv"
login=$(cut -d: -f1 "$priv/basic-auth")

# buildkitd's trust for HTTP sources (it reads SSL_CERT_FILE at start).
sysbundle=
for f in /etc/ssl/certs/ca-certificates.crt /etc/pki/tls/certs/ca-bundle.crt /etc/ssl/cert.pem; do
  [ -r "$f" ] && { sysbundle=$f; break; }
done
cat ${sysbundle:+"$sysbundle"} "$priv/ca.pem" > "$priv/ca-bundle.pem.tmp" && mv "$priv/ca-bundle.pem.tmp" "$priv/ca-bundle.pem"

# answers_401 URL: the server is up, speaks TLS with our CA, and wants a login.
answers_401() { [ "$(curl -sS -o /dev/null --max-time 2 --cacert "$priv/ca.pem" -w '%{http_code}' "$1")" = 401 ]; }

# --- the private registry: htpasswd + TLS, storage under .cache/private/registry.
if alive private-registry; then
  preg=$(cat "$cache/private-registry.port")
  echo "up: private registry already running on 127.0.0.1:$preg" >&2
else
  preg=$(pick_port private-registry 5443)
  start_registry private-registry "$priv/registry" "$preg" "  tls:
    certificate: $priv/server.pem
    key: $priv/server.key
auth:
  htpasswd:
    realm: imagectl-private
    path: $priv/htpasswd"
  echo "$preg" > "$cache/private-registry.port"
  wait_for private-registry 60 answers_401 "https://127.0.0.1:$preg/v2/"
  echo "up: private registry (htpasswd, TLS) ready at 127.0.0.1:$preg" >&2
fi

# --- the private wheel index: the demo wheels behind basic auth over TLS.
"$root/bin/wheelindex" generate "$priv/wheels" --core-bytes "${IMAGECTL_DEMO_CORE_BYTES:-67108864}" --copy '/usr/share/python-wheels/pip-*-py3-none-any.whl'
if alive private-index; then
  pidx=$(cat "$cache/private-index.port")
  echo "up: private wheel index already running on 127.0.0.1:$pidx" >&2
else
  pidx=$(pick_port private-index 8443)
  start private-index "$root/bin/wheelindex" serve "$priv/wheels" --addr "127.0.0.1:$pidx" \
    --tls-cert "$priv/server.pem" --tls-key "$priv/server.key" --basic-auth "$priv/basic-auth"
  echo "$pidx" > "$cache/private-index.port"
  wait_for private-index 30 answers_401 "https://127.0.0.1:$pidx/simple/"
  echo "up: private wheel index (basic auth, TLS) ready at https://127.0.0.1:$pidx/simple/" >&2
fi

# --- the credentials, as CI gets them: a Docker config and a netrc.
auth64=$(base64 -w0 < <(tr -d '\n' < "$priv/basic-auth"))
umask_old=$(umask); umask 077
printf '{"auths":{"127.0.0.1:%s":{"auth":"%s"}}}\n' "$preg" "$auth64" > "$priv/docker/config.json.tmp"
mv "$priv/docker/config.json.tmp" "$priv/docker/config.json"
printf 'machine 127.0.0.1\n  login %s\n  password %s\n' "$login" "$(cat "$priv/password")" > "$priv/netrc.tmp"
mv "$priv/netrc.tmp" "$priv/netrc"
umask "$umask_old"

# --- buildkitd's registry configuration: TLS with our CA (loopback would
# otherwise be plain HTTP).
cat > "$priv/buildkitd.toml.tmp" <<TOML
# written by hack/private.sh: buildkitd trusts the private registry's CA
[registry."127.0.0.1:$preg"]
  http = false
  ca = ["$priv/ca.pem"]
TOML
mv "$priv/buildkitd.toml.tmp" "$priv/buildkitd.toml"

mkdir -p "$cache/env.d"
{
  printf 'export IMAGECTL_PRIVATE_REGISTRY=%q\n' "127.0.0.1:$preg"
  printf 'export IMAGECTL_PRIVATE_INDEX=%q\n' "https://127.0.0.1:$pidx/simple/"
  printf 'export IMAGECTL_PRIVATE_WHEELS_DIR=%q\n' "$priv/wheels"
  printf 'export IMAGECTL_PRIVATE_CA=%q\n' "$priv/ca.pem"
  printf 'export IMAGECTL_PRIVATE_DOCKER_CONFIG=%q\n' "$priv/docker"
  printf 'export IMAGECTL_PRIVATE_NETRC=%q\n' "$priv/netrc"
  printf 'export IMAGECTL_PRIVATE_PASSWORD_FILE=%q\n' "$priv/password"
} > "$cache/env.d/private.env.tmp"
mv "$cache/env.d/private.env.tmp" "$cache/env.d/private.env"

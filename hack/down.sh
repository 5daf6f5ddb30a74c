#!/usr/bin/env bash
# Stops exactly the processes hack/up.sh recorded in .cache/pids (and only
# while the PID still runs the recorded binary).
set -euo pipefail
cd "$(dirname "$0")/.."
hack/k8s.sh down # the cluster first, apiserver before etcd, while containerd still runs
pids=.cache/pids
[ -d "$pids" ] || exit 0
for f in "$pids"/*.pid; do
  [ -f "$f" ] || continue
  name=$(basename "$f" .pid)
  read -r pid exe < "$f" || true
  if [ -n "${pid:-}" ] && kill -0 "$pid" 2>/dev/null && [ "$(readlink "/proc/$pid/exe" 2>/dev/null | sed 's/ (deleted)$//')" = "$exe" ]; then
    kill -TERM "$pid"
    for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
      echo "down: $name (pid $pid) ignored SIGTERM for 10s; sending SIGKILL" >&2
      kill -KILL "$pid" 2>/dev/null || true
    fi
    echo "down: stopped $name (pid $pid)" >&2
  fi
  rm -f "$f"
done
rm -f .cache/env .cache/env.d/*.env

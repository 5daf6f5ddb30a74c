#!/usr/bin/env bash
# Stops exactly the processes hack/up.sh recorded in .cache/pids (and only
# while the PID still runs the recorded binary).
set -euo pipefail
cd "$(dirname "$0")/.."
hack/k8s.sh down # the cluster first, apiserver before etcd, while containerd still runs
pids=.cache/pids
[ -d "$pids" ] || exit 0
lib_pids=$pids
. hack/lib.sh
for f in "$pids"/*.pid; do
  [ -f "$f" ] || continue
  stop_recorded "$f" "$(basename "$f" .pid)" 10
done
rm -f .cache/env .cache/env.d/*.env

# shellcheck shell=bash
# The service helpers hack/up.sh (and what it sources: private.sh,
# upstream.sh, standins.sh), hack/containerd.sh, hack/k8s.sh and
# hack/down.sh share. Sourced; the sourcing script first sets:
#   lib_prefix  what wait_for's messages start with (up, k8s)
#   lib_pids    the folder of the NAME.pid files, each "PID BINARY": a
#               service counts as running only while PID runs BINARY
#   lib_log     the log file of service NAME, a printf pattern with one %s
#               for NAME (e.g. .cache/logs/k8s-%s.log)
# Everything these functions print goes to stderr. Nothing here needs more
# than bash, coreutils and sed (hack/gpu/k8s-e2e.sh runs hack/k8s.sh on a
# bare GPU host).

# lib_logfile NAME: the path of NAME's log.
lib_logfile() {
  # shellcheck disable=SC2059
  printf "$lib_log" "$1"
}

# lib_recorded FILE: the PID recorded in FILE runs the binary recorded there.
lib_recorded() {
  local f=$1 pid exe
  [ -f "$f" ] || return 1
  read -r pid exe < "$f"
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  [ "$(readlink "/proc/$pid/exe" 2>/dev/null | sed 's/ (deleted)$//')" = "$exe" ]
}

# alive NAME: service NAME's recorded PID runs its recorded binary.
alive() { lib_recorded "$lib_pids/$1.pid"; }

# start NAME BINARY ARGS...: detached (a session of its own), stdout and
# stderr appended to NAME's log, PID and binary recorded.
start() {
  local name=$1 bin=$2
  shift 2
  setsid "$bin" "$@" >> "$(lib_logfile "$name")" 2>&1 < /dev/null &
  echo "$! $(readlink -f "$bin")" > "$lib_pids/$name.pid"
}

# wait_for NAME SECONDS COMMAND...: until COMMAND succeeds; exits the
# script, with the last lines of NAME's log, when NAME dies first or
# SECONDS pass.
wait_for() {
  local name=$1 secs=$2 i log
  shift 2
  log=$(lib_logfile "$name")
  for ((i = 0; i < secs * 10; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    alive "$name" || { echo "$lib_prefix: $name exited; last lines of ${log#"$PWD"/}:" >&2; tail -n 20 "$log" >&2; exit 1; }
    sleep 0.1
  done
  echo "$lib_prefix: $name did not answer within ${secs}s; last lines of ${log#"$PWD"/}:" >&2
  tail -n 20 "$log" >&2
  exit 1
}

# stop_recorded FILE LABEL SECONDS: SIGTERM the PID recorded in FILE while
# it runs the recorded binary, SIGKILL when it is still there SECONDS
# later; FILE is removed in any case.
stop_recorded() {
  local f=$1 label=$2 secs=$3 pid exe i
  [ -f "$f" ] || return 0
  read -r pid exe < "$f" || true
  if lib_recorded "$f"; then
    kill -TERM "$pid"
    for ((i = 0; i < secs * 10; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
      echo "down: $label (pid $pid) ignored SIGTERM for ${secs}s; sending SIGKILL" >&2
      kill -KILL "$pid" 2>/dev/null || true
    fi
    echo "down: stopped $label (pid $pid)" >&2
  fi
  rm -f "$f"
}

# port_in_use PORT: something listens on 127.0.0.1:PORT.
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

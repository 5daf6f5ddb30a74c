#!/usr/bin/env bash
# Issue 25 (init start-up): one call on the idle GPU machine.
# imagectl-init = branch init2 (V2: while the 57 signals are caught, every thread
# but the main one is held on one other CPU; the main thread keeps its CPUs and
# runs the steps), init-before = main ec0f397, init-v1 = V1 (every thread on
# one CPU while they are caught), bench-gosigpin / bench-gosigpin2 = the
# go-signals floor pinned as V1 / V2. phases: init-before-ph (main), init2-ph (V2), init-exp-ph INIT2_MODE=pin
# (V1): microseconds from the exec to each step, medians.
cd "$(dirname "$0")"
OUT=${OUT:-/tmp/init2out}; mkdir -p "$OUT"
exec > >(tee "$OUT/initbench.txt") 2>&1
echo "== $(date -u) $(nproc) cores; $(uptime)"; uname -r; head -1 /proc/driver/nvidia/version 2>/dev/null
for r in 1 2 3; do
  echo "== run $r (n=300): imagectl-init = init2 (V2), before = main ec0f397, v1 = every thread pinned (V1)"
  ./initstart -tini ./tini -init ./imagectl-init -gomin ./bench-gomin -gosig ./bench-gosig \
    -also before=./init-before -also v1=./init-v1 -also gosigpin=./bench-gosigpin -also gosigpin2=./bench-gosigpin2 -n "${N:-300}"
done
echo "== signal.Notify in a fresh process, in-process time (us): 57 signals, 1 signal, 57 with every thread pinned to one CPU; 40 rounds"
for i in $(seq "${R:-40}"); do for m in all one pin; do ./sigbench $m; done; done > "$OUT/sigbench-raw.txt"
for m in all one pin; do grep "^$m " "$OUT/sigbench-raw.txt" | sed 's/.*notify=\([0-9]*\).*/\1/' | sort -n | awk -v m=$m '{x[NR]=$1} END {printf "  %-4s median %s us (p25 %s, p75 %s) over %d\n", m, x[int((NR+1)/2)], x[int(NR/4)+1], x[int(3*NR/4)], NR}'; done
echo "== phases (us since exec, medians of 200): every step, then no config"
./phases -n "${NP:-200}" ./init-before-ph ./init2-ph ./init-exp-ph@INIT2_MODE=pin
./phases -n "${NP:-200}" -noconf ./init-before-ph ./init2-ph ./init-exp-ph@INIT2_MODE=pin
echo "== done $(date -u)"

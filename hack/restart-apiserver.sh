#!/usr/bin/env bash
# restart-apiserver.sh - SIGKILL the kube-apiserver of a control plane run from binaries on this
# machine (a folder holding run/kube-apiserver.pid and logs/) and start it again with the same command line after a
# pause, as a control-plane restart does. For `make bench CLUSTER=1 RESTART=...` and by hand.
#
# Usage: REAL_CLUSTER=<out-dir> hack/restart-apiserver.sh [seconds down (default 8)]
# Returns once the new kube-apiserver process is started (not yet serving).
set -euo pipefail
: "${REAL_CLUSTER:?set REAL_CLUSTER to the control plane folder (with run/kube-apiserver.pid and logs/)}"
down=${1:-8}
pidfile=$REAL_CLUSTER/run/kube-apiserver.pid
pid=$(cat "$pidfile")
mapfile -d '' cmd < "/proc/$pid/cmdline"
kill -KILL "$pid"
while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
sleep "$down"
# Started without the descriptors this script inherited (a `flock` around it would otherwise
# stay held by the new kube-apiserver for as long as it runs).
(
  for fd in /proc/self/fd/*; do
    fd=${fd##*/}
    [[ $fd -gt 2 ]] && eval "exec $fd>&-" 2>/dev/null
  done
  exec nohup "${cmd[@]}" >>"$REAL_CLUSTER/logs/kube-apiserver.log" 2>&1
) &
echo $! > "$pidfile"

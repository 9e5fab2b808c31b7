#!/usr/bin/env bash
# refusal-recreate.sh - issue 25 item 1 on a real cluster (any KUBECONFIG): a Fermat 10
# refused by a quota of 2 Tuples for a while (its refusal backs off to a minute or more), the
# quota raised to 100, the Fermat deleted and applied again; prints how long the new Fermat
# took to be Ready. Runs the manager binary given (scoped to its own namespace, no ports).
#
# Usage: KUBECONFIG=<cluster> [NS=refusals-r1] [REFUSE_FOR=130] [BIN=target/debug/math-controller]
#        hack/refusal-recreate.sh
# The namespace is created and left behind (delete it with kubectl when done).
set -uo pipefail
NS=${NS:-refusals-r1}
REFUSE_FOR=${REFUSE_FOR:-130}
BIN=${BIN:-target/debug/math-controller}
log=${LOG:-/tmp/refusal-recreate-$NS.log}
k() { kubectl -n "$NS" "$@"; }
kubectl create ns "$NS"
k create quota tq --hard=count/tuples.math.example.com=2
"$BIN" -n "$NS" --metrics-bind-address 0 --health-probe-bind-address 0 >"$log" 2>&1 &
manager=$!
trap 'kill "$manager" 2>/dev/null' EXIT
sleep 3
fermat='{"apiVersion":"math.example.com/v1beta1","kind":"Fermat","metadata":{"name":"f"},"spec":{"number":10}}'
echo "$fermat" | k apply -f -
sleep "$REFUSE_FOR"
k get fermat f -o jsonpath='{.status.conditions[0].reason}: {.status.conditions[0].message}{"\n"}'
k patch quota tq --type merge -p '{"spec":{"hard":{"count/tuples.math.example.com":"100"}}}'
k delete fermat f --wait=true
for _ in $(seq 1 300); do
  [ -z "$(k get tuples -o name)" ] && break
  sleep 0.1
done
start=$(date +%s.%N)
echo "$fermat" | k apply -f -
for _ in $(seq 1 3000); do
  ready=$(k get fermat f -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')
  if [ "$ready" = True ]; then
    echo "Ready $(echo "$(date +%s.%N) - $start" | bc) s after the re-apply"
    break
  fi
  sleep 0.05
done
k get fermat f -o jsonpath='{.status.conditions[0].reason}: {.status.conditions[0].message}{"\n"}'
k get tuples -o name | sort

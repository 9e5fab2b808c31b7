#!/usr/bin/env bash
# Issue 25 item 5 on a real cluster: the manager as a ServiceAccount whose FlowSchema sends it
# to a priority level of one share (3 seats on kube-apiserver v1.24 and v1.36.2) that rejects
# (429) what does not fit and, with flowcontrol v1 (1.29 on), borrows no seats from idle levels
# (by default a level may borrow them, which would blur the one share); a Fermat N must converge
# with exactly its children. Prints the level's seats, the time to Ready, the 429s the manager
# counted and the children. Everything lives in namespace $NS and objects
# named $NS-*, deleted again by `hack/apf-throttle.sh clean`.
#   KUBECONFIG=<admin kubeconfig> hack/apf-throttle.sh [N]   (BIN=<manager binary> to compare)
set -euo pipefail
NS=${NS:-client-apf}
N=${1:-1000}
HERE=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BIN:-$HERE/target/debug/math-controller}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
if [ "$N" = clean ]; then
  kubectl delete ns "$NS" --ignore-not-found
  kubectl delete flowschema "$NS-math-controller" --ignore-not-found
  kubectl delete prioritylevelconfiguration "$NS-one-seat" --ignore-not-found
  kubectl delete clusterrolebinding,clusterrole "$NS-math-controller" --ignore-not-found
  exit 0
fi
# flowcontrol v1beta2 is no longer served from 1.29 on; v1 is (levels borrow idle seats since 1.26).
if kubectl api-versions | grep -qx flowcontrol.apiserver.k8s.io/v1; then
  FLOWCONTROL=v1
  LIMITED="{nominalConcurrencyShares: 1, lendablePercent: 0, borrowingLimitPercent: 0, limitResponse: {type: Reject}}"
else
  FLOWCONTROL=v1beta2
  LIMITED="{assuredConcurrencyShares: 1, limitResponse: {type: Reject}}"
fi
sed "s/^  name: math-controller$/  name: $NS-math-controller/" "$HERE/deploy/20-cluster-role.yaml" | kubectl apply -f - >/dev/null
kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Namespace
metadata: {name: $NS}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: math-controller, namespace: $NS}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: $NS-math-controller}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: $NS-math-controller}
subjects: [{kind: ServiceAccount, name: math-controller, namespace: $NS}]
---
apiVersion: flowcontrol.apiserver.k8s.io/$FLOWCONTROL
kind: PriorityLevelConfiguration
metadata: {name: $NS-one-seat}
spec:
  type: Limited
  limited: $LIMITED
---
apiVersion: flowcontrol.apiserver.k8s.io/$FLOWCONTROL
kind: FlowSchema
metadata: {name: $NS-math-controller}
spec:
  priorityLevelConfiguration: {name: $NS-one-seat}
  matchingPrecedence: 500
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: ServiceAccount, serviceAccount: {name: math-controller, namespace: $NS}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"], clusterScope: true}]
    nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["*"]}]
YAML
kubectl create token math-controller -n "$NS" --duration 1h > "$WORK/token"
cat > "$WORK/kubeconfig" <<YAML
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: $(kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.server}')
    certificate-authority-data: $(kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')
contexts: [{name: c, context: {cluster: c, user: sa, namespace: $NS}}]
current-context: c
users: [{name: sa, user: {tokenFile: $WORK/token}}]
YAML
rejected() {
  kubectl get --raw /metrics | awk -v fs="flow_schema=\"$NS-math-controller\"" 'index($0, "apiserver_flowcontrol_rejected_requests_total{") == 1 && index($0, fs) {s += $2} END {print s + 0}'
}
# The level's seats: apiserver_flowcontrol_nominal_limit_seats from 1.26 on, before that
# apiserver_flowcontrol_request_concurrency_limit.
seats() {
  kubectl get --raw /metrics | awk -v pl="priority_level=\"$NS-one-seat\"" '(index($0, "apiserver_flowcontrol_nominal_limit_seats{") == 1 || index($0, "apiserver_flowcontrol_request_concurrency_limit{") == 1) && index($0, pl) {print $2; exit}'
}
echo "priority level $NS-one-seat ($FLOWCONTROL): $(seats) seats"
NAME=apf-$N-$RANDOM
BEFORE=$(rejected)
"$BIN" --kubeconfig "$WORK/kubeconfig" -n "$NS" --metrics-bind-address 127.0.0.1:18391 \
  --health-probe-bind-address 127.0.0.1:18392 2> "$WORK/manager.log" &
PID=$!
for _ in $(seq 100); do curl -sf 127.0.0.1:18392/readyz >/dev/null && break; sleep 0.2; done
START=$(date +%s.%N)
printf 'apiVersion: math.example.com/v1beta1\nkind: Fermat\nmetadata: {name: %s}\nspec: {number: %s}\n' "$NAME" "$N" | kubectl apply -n "$NS" -f - >/dev/null
until [ "$(kubectl get fermat -n "$NS" "$NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]; do sleep 0.2; done
echo "Fermat $NAME Ready after $(echo "$(date +%s.%N) - $START" | bc) s"
echo "429s, server: $(( $(rejected) - BEFORE )); manager: $(curl -s 127.0.0.1:18391/metrics | awk '/^math_controller_api_throttled_total/ {print $2}')"
echo "Tuples: $(kubectl get tuples -n "$NS" --no-headers | grep -c "^$NAME-"), Numbers: $(kubectl get numbers -n "$NS" --no-headers | grep -c "^$NAME-")"
kill -TERM "$PID"; wait "$PID" || true

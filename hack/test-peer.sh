#!/usr/bin/env bash
# `make test-peer`: kube-rs's own cluster tests (the `#[ignore]`d ones published in kube,
# kube-client and kube-runtime 5.0.0) against a fresh test API server.
#
# The published crates are copied from ~/.cargo/registry (after `cargo fetch`) into one scratch
# workspace (hack/peer/Cargo.toml, pinned by hack/peer/Cargo.lock, built --locked into
# target/peer). A fresh server is started, `cargo test --workspace --lib -- --ignored` runs with
# KUBECONFIG pointing at it, and the run fails on any failed test except those listed in
# hack/peer/expected-failures.txt (name and reason). Listed tests are skipped, not run: the ones
# that need a kubelet would only wait for a pod that never runs.
#
#   PEER_ALL=1       run the listed tests too and report them (to see which gaps closed)
#   PEER_REAL=FILE   run against the cluster of that kubeconfig instead of a fresh test server
#   PEER_FILTER=STR  run only the tests whose name contains STR
#   PEER_SERVER=BIN  use this test-apiserver binary instead of building the workspace's
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
peer="$root/hack/peer"
scratch="$root/target/peer"
work="$scratch/ws"
version=5.0.0

registry_crate() {
  local found
  found=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/"$1-$version" 2>/dev/null | head -n 1)
  if [ -z "$found" ]; then
    cargo fetch --locked --manifest-path "$root/Cargo.toml" >/dev/null
    found=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/"$1-$version" | head -n 1)
  fi
  echo "$found"
}

mkdir -p "$work"
for crate in kube kube-client kube-runtime; do
  src=$(registry_crate "$crate")
  rm -rf "${work:?}/$crate"
  cp -r "$src" "$work/$crate"
  rm -f "$work/$crate/Cargo.lock"
done
# `cargo publish` drops path-only dev-dependencies: kube-client's and kube-runtime's tests
# `use kube::...` through a dev-dependency on ../kube (upstream's Cargo.toml); put it back.
cat >>"$work/kube-client/Cargo.toml" <<'TOML'

[dev-dependencies.kube]
path = "../kube"
features = ["derive", "client", "ws", "runtime"]
TOML
cat >>"$work/kube-runtime/Cargo.toml" <<'TOML'

[dev-dependencies.kube]
path = "../kube"
features = ["derive", "client", "runtime"]
TOML
cp "$peer/Cargo.toml" "$peer/Cargo.lock" "$work/"

# Test names (as `cargo test` prints them) that are expected to fail, one per line:
# `<name> <reason>`; `#` starts a comment.
expected=$( (grep -vE '^[[:space:]]*(#|$)' "$peer/expected-failures.txt" || true) | awk '{print $1}')
skips=()
if [ -z "${PEER_ALL:-}" ]; then
  for name in $expected; do skips+=(--skip "$name"); done
fi

# kube-client's own features are not unified with kube's defaults in its test binary: name them.
features="kube/derive,kube/runtime,kube/ws,kube/unstable-runtime,kube-client/ws,kube-client/rustls-tls,kube-client/unstable-client"
export CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-2}"
start=$(date +%s)
# The server from the project's own target dir (shared with `make test`), the peers in theirs.
server_bin="${PEER_SERVER:-}"
if [ -z "$server_bin" ] && [ -z "${PEER_REAL:-}" ]; then
  cargo build --locked -p test-apiserver --quiet
  server_bin="$(cargo metadata --format-version 1 --no-deps | sed -E 's/.*"target_directory":"([^"]*)".*/\1/')/debug/test-apiserver"
fi
export CARGO_TARGET_DIR="$scratch/target"
(cd "$work" && cargo test --locked --workspace --lib --features "$features" --no-run --quiet)
built=$(date +%s)

server_pid=""
cleanup() { if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi; }
trap cleanup EXIT
if [ -n "${PEER_REAL:-}" ]; then
  export KUBECONFIG="$PEER_REAL"
else
  export KUBECONFIG="$scratch/kubeconfig"
  rm -f "$KUBECONFIG"
  "$server_bin" --port 0 --kubeconfig "$KUBECONFIG" >/dev/null 2>"$scratch/server.log" &
  server_pid=$!
  for _ in $(seq 1 100); do [ -s "$KUBECONFIG" ] && break; sleep 0.1; done
  [ -s "$KUBECONFIG" ] || { echo "test-peer: the test API server did not start" >&2; cat "$scratch/server.log" >&2; exit 1; }
fi

log="$scratch/test.log"
set +e
(cd "$work" && cargo test --locked --workspace --lib --features "$features" --no-fail-fast -- \
  --ignored ${PEER_FILTER:+"$PEER_FILTER"} "${skips[@]}") >"$log" 2>&1
set -e
finished=$(date +%s)

# Test names whose line ends with $1 (none is no error).
outcome() { { grep -E "^test .* \.\.\. $1\$" "$log" || true; } | awk '{print $2}' | sort; }
passed=$(outcome ok)
failed=$(outcome FAILED)
unexpected=$(comm -23 <(echo "$failed" | sed '/^$/d') <(echo "$expected" | sort) || true)
fixed=""
if [ -n "${PEER_ALL:-}" ]; then
  fixed=$(comm -12 <(echo "$passed" | sed '/^$/d') <(echo "$expected" | sort) || true)
fi

echo "test-peer: kube $version cluster tests against ${PEER_REAL:-a fresh test API server}"
echo "$passed" | sed '/^$/d; s/^/  ok      /'
echo "$failed" | sed '/^$/d; s/^/  FAILED  /'
[ -n "${PEER_ALL:-}" ] || echo "$expected" | sed '/^$/d; s/^/  skipped /'
echo "test-peer: $(echo "$passed" | sed '/^$/d' | wc -l) passed, $(echo "$failed" | sed '/^$/d' | wc -l) failed;" \
  "build $((built - start)) s, run $((finished - built)) s; full output: $log"
if [ -n "$fixed" ]; then
  echo "test-peer: these pass now; take them out of hack/peer/expected-failures.txt:"
  echo "$fixed" | sed 's/^/  /'
fi
if [ -n "$unexpected" ]; then
  echo "test-peer: unexpected failures (not in hack/peer/expected-failures.txt):" >&2
  echo "$unexpected" | sed 's/^/  /' >&2
  exit 1
fi
if ! grep -qE '^test result: ' "$log"; then
  echo "test-peer: the tests did not run; see $log" >&2
  tail -n 30 "$log" >&2
  exit 1
fi

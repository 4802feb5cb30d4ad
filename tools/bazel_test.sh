#!/usr/bin/env bash
# The Bazel half of CI: `./bazelw test //...` on a fresh Debian 12 host (root; bazelw provisions the
# offline Bazel 7.7.1 environment on first use), plus the CPU-only checks and remote execution on a
# loopback BuildGrid stack (POLYKERN_SKIP_REMOTE=1 skips that step). Extra arguments go to the
# main `bazel test` (e.g. --test_output=all). Exit status: non-zero if any step fails.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
CI_FLAGS=(--curses=no --color=no --show_progress_rate_limit=30)
rc=0
step() {
  local name="$1"; shift
  local t0=$SECONDS
  echo "=== bazel: $name"
  if "$@"; then echo "=== bazel: $name: ok ($((SECONDS - t0)) s)"
  else echo "=== bazel: $name: FAILED ($((SECONDS - t0)) s)"; rc=1; fi
}

step "the CPU-only compiler" ./bazelw build "${CI_FLAGS[@]}" //:compiler --config=cpu
step "every test (runtimes as detected on this host)" \
  ./bazelw test "${CI_FLAGS[@]}" --keep_going //... "$@"
step "device-free checks under --config=cpu" \
  ./bazelw test "${CI_FLAGS[@]}" --keep_going --config=cpu \
  //tests:cross_compile_cpu //tests/bazel/... //toolchains/... //backends:codegen_isolation_tests
# --config=remote needs an endpoint from user.bazelrc (common:remote-endpoint ...): without one it
# must stop at once, naming what is missing, and never fall back to building locally.
remote_check() {
  local out
  if [ -f user.bazelrc ] && grep -q '^[a-z]*:remote-endpoint' user.bazelrc; then
    echo "user.bazelrc defines remote-endpoint: not checking the refusal"; return 0
  fi
  out="$(./bazelw build "${CI_FLAGS[@]}" --config=remote --nobuild //:compiler 2>&1)" &&
    { echo "--config=remote without an endpoint unexpectedly worked"; return 1; }
  grep -q "Config value 'remote-endpoint' is not defined" <<<"$out" || { echo "$out" | tail -5; return 1; }
}
step "--config=remote without an endpoint refuses clearly" remote_check
step "bazelw in a workspace deleted and cloned again at its path" bash tools/bazelw_reclone_check.sh
step "a downstream workspace depends on polykern (examples/bazel_consumer)" bash tools/bazel_consumer_check.sh
# Remote execution on the loopback stack (BuildGrid + PostgreSQL + buildbox workers, 127.0.0.1 only):
# //tests:cross_compile runs remotely, routing proven from BuildGrid's records (docs/remote-execution.md).
# (The workspace's Bazel server is stopped first: the step runs its own, in its own output base.)
if [ "${POLYKERN_SKIP_REMOTE:-0}" != 1 ]; then
  ./bazelw shutdown >/dev/null 2>&1 || true
  step "remote execution on the loopback stack (tools/remote/ci_test.sh)" bash tools/remote/ci_test.sh
fi
echo "test logs: $(readlink -f bazel-testlogs 2>/dev/null || echo bazel-testlogs)"
./bazelw shutdown >/dev/null 2>&1 || true
exit "$rc"

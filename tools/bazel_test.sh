#!/usr/bin/env bash
# The Bazel half of CI: `./bazelw test //...` on a fresh Debian 12 host (root; bazelw provisions the
# offline Bazel 7.7.1 environment on first use), plus the CPU-only checks. Extra arguments go to the
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
  //tests:cross_compile //tests/bazel/... //toolchains/... //backends:codegen_isolation_tests
# --config=remote must refuse clearly until remote execution is set up.
remote_check() {
  local out
  out="$(./bazelw build --config=remote //:compiler 2>&1)" && { echo "--config=remote unexpectedly worked"; return 1; }
  grep -q "remote_execution_is_not_set_up_yet" <<<"$out" || { echo "$out" | tail -5; return 1; }
}
step "--config=remote refuses with a clear message" remote_check
echo "test logs: $(readlink -f bazel-testlogs 2>/dev/null || echo bazel-testlogs)"
./bazelw shutdown >/dev/null 2>&1 || true
exit "$rc"

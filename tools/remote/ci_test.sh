#!/usr/bin/env bash
# CI check of remote execution (called by tools/bazel_test.sh; POLYKERN_SKIP_REMOTE=1 skips it):
#   1. start the loopback stack (tools/remote/up.sh: PostgreSQL + BuildGrid + buildbox workers with
#      Pool=cpu and Pool=gpu, 127.0.0.1 only, stopping by themselves after POLYKERN_REMOTE_TTL);
#   2. `bazel test --config=remote-local //tests:cross_compile` in its own output base, after
#      `bazel clean`, so that every action really executes remotely;
#   3. prove from the engine's records (BuildGrid's database, the workers' logs) that every compile
#      action ran on the cpu-pool worker and the GPU-tagged tests on the gpu-pool worker, where they
#      skip their launch with a reason (tools/remote/check_routing.py; its self-test first shows that
#      a wrong routing would be caught);
#   4. `bazel clean` and the same build again: every action must be a remote cache hit;
#   5. `bazel clean` and the same build with local execution, for the time comparison;
#   6. stop the stack and the output base's Bazel server (also on failure or interruption).
# Reports go to $POLYKERN_REMOTE_CI_OUT (default /tmp/polykern-remote-ci): execution logs, BuildGrid
# records, worker logs, summary.txt.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
# Its own stack (state, ports), so that a developer's stack on the defaults is left alone.
export POLYKERN_REMOTE_STATE="${POLYKERN_REMOTE_CI_STATE:-/tmp/polykern-remote-ci-stack}"
export POLYKERN_REMOTE_PORT="${POLYKERN_REMOTE_CI_PORT:-50161}"
export POLYKERN_REMOTE_PG_PORT="${POLYKERN_REMOTE_CI_PG_PORT:-50162}"
export POLYKERN_REMOTE_TTL="${POLYKERN_REMOTE_TTL:-1800}"
# shellcheck source=tools/remote/common.sh
. tools/remote/common.sh
OUT="${POLYKERN_REMOTE_CI_OUT:-/tmp/polykern-remote-ci}"
OB="${POLYKERN_REMOTE_OUTPUT_BASE:-/tmp/polykern-remote-bazel}"
EXPECT_RUN="${POLYKERN_REMOTE_EXPECT_RUN:-llvm,opencl,vulkan,webgpu}"
SUITE=//tests:cross_compile
# //tests:cross_compile_emulated runs the aarch64/Hexagon artifacts under the host's QEMU with the host's
# cross toolchain (tagged no-remote): it is not part of what this check proves runs remotely.
LOCAL_ONLY=(-//tests:cross_compile_emulated)
B=(./bazelw --output_base="$OB")
REMOTE=(--config=remote-local --remote_executor="grpc://$RS_HOST:$RS_PORT" --remote_instance_name="$RS_INSTANCE")
FLAGS=(--curses=no --color=no --show_progress_rate_limit=30 --symlink_prefix=/)

# One run at a time on a machine (fixed ports, state and output base): a second waits for the first.
exec 8>"${OUT%/}.lock"
if ! flock -n 8; then
  echo "remote CI: another run of tools/remote/ci_test.sh holds ${OUT%/}.lock; waiting (at most 20 min)"
  flock -w 1200 8 || { echo "remote CI: FAILED: still locked after 20 min"; exit 1; }
fi
t_start=$SECONDS
tools/remote/down.sh --quiet   # what an interrupted earlier run of this script may have left
rm -rf "$OUT"
mkdir -p "$OUT"
cleanup() {
  "${B[@]}" shutdown >/dev/null 2>&1 || true
  tools/remote/down.sh --quiet
  cp "$RS_LOGS"/*.log "$OUT/" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM
fail() { echo "remote CI: FAILED: $*"; exit 1; }

tools/remote/up.sh || fail "the stack did not start (logs: $RS_LOGS)"
t_up=$((SECONDS - t_start))
VENV="$(sed -n 's/^POLYKERN_REMOTE_VENV=//p' "$RS_STATE/env")"
mapfile -t ENVS < <(rs_env_args)
records() { ./bazelw --polykern-exec env "${ENVS[@]}" "$VENV/bin/python3" tools/remote/records.py dump "$1"; }

# run NAME FLAGS...: `bazel clean`, then the suite, timed; keeps Bazel's output and execution log.
declare -A WALL ELAPSED PROCS
run() {
  local name="$1"; shift
  "${B[@]}" clean "${FLAGS[@]}" >/dev/null 2>&1
  # Analysis first (not timed): every run then times the same thing, execution.
  "${B[@]}" build "${FLAGS[@]}" --nobuild "$@" -- "$SUITE" "${LOCAL_ONLY[@]}" >"$OUT/$name.analysis.log" 2>&1 ||
    { tail -n 30 "$OUT/$name.analysis.log"; return 1; }
  local t0=$SECONDS rc=0
  "${B[@]}" test "${FLAGS[@]}" --execution_log_json_file="$OUT/exec_$name.json" "$@" -- "$SUITE" "${LOCAL_ONLY[@]}" \
    >"$OUT/$name.log" 2>&1 || rc=$?
  WALL[$name]=$((SECONDS - t0))
  ELAPSED[$name]="$(sed -n 's/^INFO: Elapsed time: \([0-9.]*\)s.*/\1/p' "$OUT/$name.log" | tail -n1)"
  PROCS[$name]="$(sed -n 's/^INFO: \([0-9]* processes: .*\)\.$/\1/p' "$OUT/$name.log" | tail -n1)"
  grep -E '^//tests:cross_compile' "$OUT/$name.log" | sed 's/^/    /'
  echo "  $name: ${WALL[$name]} s wall, Bazel elapsed ${ELAPSED[$name]} s; ${PROCS[$name]}"
  [ "$rc" = 0 ] || { tail -n 40 "$OUT/$name.log"; return 1; }
}

echo "--- remote execution, fresh stack: every action executes on a worker"
run remote "${REMOTE[@]}" || fail "the remote build failed (log: $OUT/remote.log)"
records "$OUT/records_remote.json" || fail "could not read BuildGrid's records"
cp "$RS_LOGS/worker-cpu.log" "$RS_LOGS/worker-gpu.log" "$OUT/"
TESTLOGS="$("${B[@]}" info "${FLAGS[@]}" bazel-testlogs 2>/dev/null)"
mapfile -t GPU_TESTS < <("${B[@]}" query --output=label \
  "attr(tags, 'requires-gpu-nvidia', tests($SUITE))" 2>/dev/null)
[ "${#GPU_TESTS[@]}" -gt 0 ] || fail "$SUITE has no test tagged requires-gpu-nvidia"
CHECK=(--exec-log "$OUT/exec_remote.json" --records "$OUT/records_remote.json"
       --worker-log "cpu=$OUT/worker-cpu.log" --worker-log "gpu=$OUT/worker-gpu.log"
       --testlogs "$TESTLOGS" --expect-run "$EXPECT_RUN")
for t in "${GPU_TESTS[@]}"; do CHECK+=(--gpu-target "$t"); done
python3 tools/remote/check_routing.py self-test "${CHECK[@]}" || fail "the routing check's self-test"
python3 tools/remote/check_routing.py executed "${CHECK[@]}" | tee "$OUT/routing.txt"
[ "${PIPESTATUS[0]}" = 0 ] || fail "routing not proven (see above)"
./bazelw --polykern-exec env "${ENVS[@]}" "$VENV/bin/python3" tools/remote/records.py summary \
  | tee "$OUT/buildgrid_summary.txt"
JOBS="$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["jobs"]))' "$OUT/records_remote.json")"

echo "--- remote again after bazel clean: every action is a remote cache hit"
run cached "${REMOTE[@]}" || fail "the cached remote build failed (log: $OUT/cached.log)"
records "$OUT/records_cached.json" || fail "could not read BuildGrid's records"
python3 tools/remote/check_routing.py cached --exec-log "$OUT/exec_cached.json" \
  --records "$OUT/records_cached.json" --jobs-before "$JOBS" || fail "the second run was not served from the cache"

echo "--- local execution after bazel clean (for comparison)"
run local || fail "the local build failed (log: $OUT/local.log)"

{
  echo "remote execution CI ($SUITE, $(nproc) cores, stack up in ${t_up} s):"
  for n in remote cached local; do
    printf '  %-7s %4s s wall (Bazel elapsed %6s s)  %s\n' "$n" "${WALL[$n]}" "${ELAPSED[$n]}" "${PROCS[$n]}"
  done
  echo "  BuildGrid jobs: $JOBS (cpu pool / gpu pool split in buildgrid_summary.txt)"
  echo "  total $((SECONDS - t_start)) s; reports in $OUT"
} | tee "$OUT/summary.txt"
echo "remote CI: ok"

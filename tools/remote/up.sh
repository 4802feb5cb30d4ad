#!/usr/bin/env bash
# Start polykern's loopback remote-execution stack: PostgreSQL + BuildGrid + two buildbox workers
# (Pool=cpu, Pool=gpu), all on 127.0.0.1, all stopping by themselves after POLYKERN_REMOTE_TTL
# seconds (default 7200). Then:
#   ./bazelw test --config=remote-local //tests:cross_compile
#   tools/remote/status.sh          what runs, which worker ran which jobs
#   tools/remote/down.sh            stop it
# Knobs: tools/remote/common.sh. Docs: docs/remote-execution.md.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
# shellcheck source=tools/remote/common.sh
. tools/remote/common.sh

if pid="$(rs_pid buildgrid)"; then
  rs_say "already running (BuildGrid pid $pid, state $RS_STATE); tools/remote/down.sh stops it"
  exit 0
fi
# Leftovers of a stack whose processes died (TTL, crash): stop what may remain, then start afresh.
[ -d "$RS_PIDS" ] && tools/remote/down.sh --quiet

# The workers run where Bazel's actions run: inside ./bazelw's environment (with Debian's buildbox,
# PostgreSQL and python3-venv added to it), or on this host when bazelw uses a Bazel from PATH.
./bazelw --polykern-provision remote
mapfile -t envs < <(rs_env_args)
./bazelw --polykern-exec env "${envs[@]}" bash tools/remote/stack.sh up

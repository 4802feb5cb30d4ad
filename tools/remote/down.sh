#!/usr/bin/env bash
# Stop polykern's loopback remote-execution stack: each process by the pid recorded when it was
# started (checked against its start time, so a reused pid is never signalled), workers first,
# PostgreSQL last. Keeps $POLYKERN_REMOTE_STATE/logs for post-mortems; --purge removes everything.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
# shellcheck source=tools/remote/common.sh
. tools/remote/common.sh

quiet=0 purge=0
for a in "$@"; do
  case "$a" in --quiet) quiet=1;; --purge) purge=1;; *) rs_die "usage: down.sh [--quiet] [--purge]";; esac
done
say() { [ "$quiet" = 1 ] || rs_say "$@"; }

stopped=0
for name in $RS_SERVICES; do
  pid="$(rs_pid "$name")" || { rm -f "$RS_PIDS/$name.pid"; continue; }
  # Each service runs as `timeout ... CMD` leading its own session: the signal goes to timeout,
  # which forwards it to CMD (postgres: SIGINT = fast shutdown); the rest of the session (runner
  # processes and actions of a worker) gets SIGKILL if it outlives the grace period.
  sig=TERM; [ "$name" = postgres ] && sig=INT
  kill -s "$sig" "$pid" 2>/dev/null
  for _ in $(seq 1 60); do rs_pid "$name" >/dev/null || break; sleep 0.5; done
  if rs_pid "$name" >/dev/null; then
    say "$name (pid $pid) did not stop in 30 s: SIGKILL to its session"
    kill -s KILL -- "-$pid" 2>/dev/null
  fi
  # Leftovers in the service's session (e.g. an action a killed worker had started).
  if pgrep -s "$pid" >/dev/null 2>&1; then
    sleep 1
    kill -s KILL -- "-$pid" 2>/dev/null
  fi
  rm -f "$RS_PIDS/$name.pid"
  stopped=$((stopped + 1))
  say "stopped $name (pid $pid)"
done
if [ -d "$RS_STATE" ]; then
  if [ "$purge" = 1 ]; then
    rm -rf "$RS_STATE"
  else
    # The data is throwaway (in-memory CAS, a test database): keep only logs and the config.
    rm -rf "$RS_STATE/pg" "$RS_STATE"/casd-* "$RS_STATE"/work-* "$RS_STATE/sock" "$RS_STATE/db_url"
  fi
fi
[ "$stopped" -gt 0 ] || say "nothing was running (state: $RS_STATE)"
exit 0

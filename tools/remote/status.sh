#!/usr/bin/env bash
# What the loopback remote-execution stack is doing: its processes, and from BuildGrid's own
# database the workers (with their platform properties) and the jobs each one ran.
# Exit status: 0 if every service runs, 1 otherwise.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
# shellcheck source=tools/remote/common.sh
. tools/remote/common.sh

rc=0
for name in $RS_SERVICES; do
  if pid="$(rs_pid "$name")"; then
    printf '  %-11s running  pid %-8s %s\n' "$name" "$pid" "$(tr '\0' ' ' </proc/"$pid"/cmdline | cut -c1-110)"
  else
    printf '  %-11s stopped\n' "$name"; rc=1
  fi
done
if rs_pid buildgrid >/dev/null && rs_pid postgres >/dev/null; then
  echo "REAPI endpoint: grpc://$RS_HOST:$RS_PORT  instance: $RS_INSTANCE  (./bazelw ... --config=remote-local)"
  venv="$(sed -n 's/^POLYKERN_REMOTE_VENV=//p' "$RS_STATE/env" 2>/dev/null)"
  mapfile -t envs < <(rs_env_args)
  ./bazelw --polykern-exec env "${envs[@]}" "$venv/bin/python3" tools/remote/records.py summary
else
  echo "the stack is not (fully) running; tools/remote/up.sh starts it"
fi
exit "$rc"

# shellcheck shell=bash disable=SC2034
# Settings shared by tools/remote/*.sh (sourced). Every knob is an environment variable; the defaults
# match --config=remote-local in .bazelrc (port 50151, instance "polykern-local").
#
#   POLYKERN_REMOTE_STATE=DIR      state, logs, database of the stack (default /tmp/polykern-remote;
#                                  must be visible inside ./bazelw's environment, as /tmp is)
#   POLYKERN_REMOTE_PORT=N         BuildGrid's REAPI port on 127.0.0.1 (default 50151)
#   POLYKERN_REMOTE_PG_PORT=N      PostgreSQL's port on 127.0.0.1 (default 50152)
#   POLYKERN_REMOTE_INSTANCE=NAME  REAPI instance name (default polykern-local)
#   POLYKERN_REMOTE_TTL=SECONDS    every process of the stack stops by itself after this long (7200)
#   POLYKERN_REMOTE_CAS_SIZE=SIZE  BuildGrid's in-memory CAS (LRU) size (default 3G)
#   POLYKERN_REMOTE_CPU_JOBS=N     concurrent jobs of the cpu-pool worker (default 2)

RS_STATE="${POLYKERN_REMOTE_STATE:-/tmp/polykern-remote}"
RS_PORT="${POLYKERN_REMOTE_PORT:-50151}"
RS_PG_PORT="${POLYKERN_REMOTE_PG_PORT:-50152}"
RS_INSTANCE="${POLYKERN_REMOTE_INSTANCE:-polykern-local}"
RS_TTL="${POLYKERN_REMOTE_TTL:-7200}"
RS_CAS_SIZE="${POLYKERN_REMOTE_CAS_SIZE:-3G}"
RS_CPU_JOBS="${POLYKERN_REMOTE_CPU_JOBS:-2}"
RS_HOST=127.0.0.1
RS_PIDS="$RS_STATE/pids"
RS_LOGS="$RS_STATE/logs"
# Stop order (down.sh): workers first, then their local CAS proxies, BuildGrid, PostgreSQL.
RS_SERVICES="worker-gpu worker-cpu casd-gpu casd-cpu buildgrid postgres"

rs_say() { printf 'remote: %s\n' "$*" >&2; }
rs_die() { printf 'remote: error: %s\n' "$*" >&2; exit 1; }

# The environment variables the scripts pass into ./bazelw --polykern-exec (which starts clean).
rs_env_args() {
  local v
  for v in POLYKERN_REMOTE_STATE POLYKERN_REMOTE_PORT POLYKERN_REMOTE_PG_PORT POLYKERN_REMOTE_INSTANCE \
           POLYKERN_REMOTE_TTL POLYKERN_REMOTE_CAS_SIZE POLYKERN_REMOTE_CPU_JOBS; do
    [ -n "${!v:-}" ] && printf '%s\n' "$v=${!v}"
  done
  return 0
}

# Start time of a process (field 22 of /proc/PID/stat), to tell a recorded pid from a reused one.
rs_starttime() { awk '{ sub(/^.*\) /, ""); print $20 }' "/proc/$1/stat" 2>/dev/null; }

# rs_pid NAME: the recorded pid of service NAME if that very process still runs, else nothing.
rs_pid() {
  local f="$RS_PIDS/$1.pid" pid start
  [ -f "$f" ] || return 1
  read -r pid start _ <"$f" || return 1
  [ -n "$pid" ] && [ "$(rs_starttime "$pid")" = "$start" ] || return 1
  printf '%s' "$pid"
}

rs_port_open() {  # rs_port_open PORT: something listens on 127.0.0.1:PORT
  (exec 3<>"/dev/tcp/$RS_HOST/$1") 2>/dev/null
}

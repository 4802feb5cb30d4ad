#!/usr/bin/env bash
# The loopback remote-execution stack, started INSIDE the environment where Bazel's actions run
# (tools/remote/up.sh calls `./bazelw --polykern-exec bash tools/remote/stack.sh up`), so that a remote
# action sees the same root filesystem, Python and device runtimes as a local one.
#
#   PostgreSQL   127.0.0.1:$RS_PG_PORT, a throwaway cluster under $RS_STATE/pg (BuildGrid's scheduler
#                needs it: it rejects sqlite)
#   BuildGrid    127.0.0.1:$RS_PORT, instance $RS_INSTANCE: Execution, Bots, ActionCache, CAS and
#                ByteStream; CAS and action cache in memory; platform keys OSFamily and Pool matched
#   buildbox     two workers, each with its own buildbox-casd (a local CAS proxy with a disk cache
#                under $RS_STATE, on a unix socket) and buildbox-run-hosttools as runner:
#                  polykern-cpu-0  Pool=cpu  ($RS_CPU_JOBS jobs at once): every build action
#                  polykern-gpu-0  Pool=gpu  (1 job): tests with exec_properties {"test.Pool": "gpu"}
#                This host has no GPU: the gpu-pool worker is an honest stand-in for routing only,
#                and GPU tests running on it skip with their reason.
#
# Every process runs under `timeout $RS_TTL` in its own session (pid files in $RS_STATE/pids);
# tools/remote/down.sh stops them by those pids.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
# shellcheck source=tools/remote/common.sh
. tools/remote/common.sh

[ "${1:-}" = up ] || rs_die "usage: stack.sh up (run through tools/remote/up.sh)"
[ "$(id -u)" = 0 ] || rs_die "stack.sh must run as root (it runs PostgreSQL as the 'postgres' user)"

LOCK=tools/remote/buildgrid_lock.txt
if [ "${POLYKERN_EXEC_ENV:-}" = chroot ]; then
  VENV_ROOT=/opt/polykern-remote          # inside ./bazelw's root filesystem: kept between runs
else
  VENV_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/polykern/remote"
fi
VENV="$VENV_ROOT/buildgrid-$(sha256sum "$LOCK" | cut -c1-12)"

need() { command -v "$1" >/dev/null || rs_die "'$1' not found: $2"; }
need buildbox-worker "install Debian's 'buildbox' package (./bazelw --polykern-provision remote)"
need buildbox-run-hosttools "install Debian's 'buildbox' package"
need buildbox-casd "install Debian's 'buildbox' package"
need setpriv "util-linux is missing"
need timeout "coreutils is missing"
PGBIN="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)"
[ -x "$PGBIN/postgres" ] || rs_die "PostgreSQL not found under /usr/lib/postgresql (install 'postgresql')"
id postgres >/dev/null 2>&1 || rs_die "no 'postgres' user (install 'postgresql')"

for p in "$RS_PORT" "$RS_PG_PORT"; do
  rs_port_open "$p" && rs_die "127.0.0.1:$p is already in use (another stack? tools/remote/status.sh; \
or pick other ports with POLYKERN_REMOTE_PORT / POLYKERN_REMOTE_PG_PORT)"
done

t0=$SECONDS
rm -rf "$RS_STATE"
mkdir -p "$RS_PIDS" "$RS_LOGS" "$RS_STATE/pg" "$RS_STATE/sock"
chmod 711 "$RS_STATE"   # the postgres user must reach pg/ (700, its own)

# start NAME SIGNAL CMD...: CMD in its own session under `timeout -s SIGNAL $RS_TTL`, output to
# logs/NAME.log; the pid file holds timeout's pid (it forwards signals to CMD) and its start time.
start() {
  local name="$1" sig="$2"; shift 2
  setsid timeout -k 20 -s "$sig" "$RS_TTL" "$@" </dev/null >>"$RS_LOGS/$name.log" 2>&1 &
  local pid=$!
  printf '%s %s %s\n' "$pid" "$(rs_starttime "$pid")" "$*" >"$RS_PIDS/$name.pid"
}

wait_for() {  # wait_for WHAT SECONDS CMD...
  local what="$1" secs="$2"; shift 2
  local end=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $end ] || { tail -n 30 "$RS_LOGS"/*.log >&2 || true; rs_die "$what did not come up in ${secs} s"; }
    sleep 0.5
  done
}

# --- BuildGrid's virtualenv (hash-pinned, Python >= 3.13) ----------------------------------------
if [ ! -f "$VENV/.complete" ]; then
  python3 -c 'import sys; sys.exit(sys.version_info < (3, 13))' ||
    rs_die "BuildGrid needs Python >= 3.13; this environment has $(python3 --version 2>&1)"
  rs_say "installing BuildGrid into $VENV (one time)"
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check --require-hashes --no-deps -r "$LOCK" \
    >"$RS_LOGS/pip.log" 2>&1 || { tail -n 20 "$RS_LOGS/pip.log" >&2; rm -rf "$VENV"; rs_die "pip install failed"; }
  touch "$VENV/.complete"
fi

# --- PostgreSQL ----------------------------------------------------------------------------------
PG_PASS="$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
printf '%s\n' "$PG_PASS" >"$RS_STATE/pg/pwfile"
chown -R postgres:postgres "$RS_STATE/pg"
chmod 700 "$RS_STATE/pg"
as_pg() { setpriv --reuid=postgres --regid=postgres --init-groups -- "$@"; }
as_pg "$PGBIN/initdb" -D "$RS_STATE/pg/data" -U bgd --pwfile="$RS_STATE/pg/pwfile" -E UTF8 \
  --auth-host=scram-sha-256 --auth-local=trust --no-instructions >"$RS_LOGS/initdb.log" 2>&1 ||
  { cat "$RS_LOGS/initdb.log" >&2; rs_die "initdb failed"; }
# A throwaway database: durability settings off (it lives as long as the stack).
start postgres INT setpriv --reuid=postgres --regid=postgres --init-groups -- "$PGBIN/postgres" \
  -D "$RS_STATE/pg/data" -c listen_addresses="$RS_HOST" -p "$RS_PG_PORT" \
  -c unix_socket_directories="$RS_STATE/pg" -c fsync=off -c synchronous_commit=off \
  -c full_page_writes=off -c max_connections=100
wait_for PostgreSQL 60 "$PGBIN/pg_isready" -q -h "$RS_HOST" -p "$RS_PG_PORT"
as_pg "$PGBIN/createdb" -h "$RS_STATE/pg" -p "$RS_PG_PORT" -U bgd bgd
DB_URL="postgresql+psycopg://bgd:$PG_PASS@$RS_HOST:$RS_PG_PORT/bgd"
printf '%s\n' "$DB_URL" >"$RS_STATE/db_url"
chmod 600 "$RS_STATE/db_url"
"$VENV/bin/bgd" migrate apply "$DB_URL" >"$RS_LOGS/migrate.log" 2>&1 ||
  { tail -n 20 "$RS_LOGS/migrate.log" >&2; rs_die "bgd migrate failed"; }

# --- BuildGrid -----------------------------------------------------------------------------------
cat >"$RS_STATE/buildgrid.yml" <<EOF
# Generated by tools/remote/stack.sh: BuildGrid for polykern's loopback remote execution.
description: polykern loopback remote execution (tools/remote)
server:
  - !channel
    address: "$RS_HOST:$RS_PORT"
    insecure-mode: true
authorization:
  method: none
monitoring:
  enabled: false
# Bazel uploads inputs with many concurrent ByteStream writes: RPCs beyond the thread pool queue
# instead of failing with RESOURCE_EXHAUSTED ("Concurrent RPC limit exceeded").
thread-pool-size: 64
maximum-concurrent-rpcs: 2048
connections:
  - !sql-connection &sql
    connection-string: "$DB_URL"
    pool-size: 10
    max-overflow: 10
    pool-timeout: 30
storages:
  - !lru-storage &cas
    size: $RS_CAS_SIZE
caches:
  - !lru-action-cache &ac
    storage: *cas
    max-cached-refs: 100000
    allow-updates: true
    cache-failed-actions: false
schedulers:
  - !sql-scheduler &scheduler
    sql: *sql
    storage: *cas
    action-cache: *ac
    # Jobs and workers are matched on these platform keys (from //toolchains:cpu_pool / gpu_pool
    # and exec_properties such as {"test.Pool": "gpu"}); any other key is rejected.
    property-set: !dynamic-property-set
      match-property-keys: [OSFamily, Pool]
      wildcard-property-keys: []
    bot-session-keepalive-timeout: 60
    max-execution-timeout: 1800
    max-job-attempts: 2
instances:
  - name: $RS_INSTANCE
    description: polykern loopback instance
    services:
      - !action-cache
        cache: *ac
      - !execution
        scheduler: *scheduler
        operation-stream-keepalive-timeout: 30
      - !cas
        storage: *cas
      - !bytestream
        storage: *cas
EOF
chmod 600 "$RS_STATE/buildgrid.yml"
start buildgrid TERM "$VENV/bin/bgd" server start -v "$RS_STATE/buildgrid.yml"
wait_for "BuildGrid on $RS_HOST:$RS_PORT" 90 rs_port_open "$RS_PORT"

# --- buildbox workers ----------------------------------------------------------------------------
# worker POOL JOBS: buildbox-casd (local CAS + staging, proxying BuildGrid's CAS) and buildbox-worker
# advertising OSFamily=Linux, Pool=POOL; runner = buildbox-run-hosttools with a cleared environment
# (the action's Command gives the whole environment, as Bazel's strict action env does locally).
worker() {
  local pool="$1" jobs="$2"
  local sock="$RS_STATE/sock/casd-$pool.sock"
  mkdir -p "$RS_STATE/casd-$pool" "$RS_STATE/work-$pool"
  start "casd-$pool" TERM buildbox-casd --cas-remote="http://$RS_HOST:$RS_PORT" --cas-instance="$RS_INSTANCE" \
    --bind="unix:$sock" --quota-high=4G --log-level=info "$RS_STATE/casd-$pool"
  wait_for "buildbox-casd ($pool)" 30 test -S "$sock"
  # Each job is staged in its own temporary folder under work-POOL, by hard links from casd's cache
  # (copy-or-link: no FUSE needed, which restricted containers lack).
  start "worker-$pool" TERM env TMPDIR="$RS_STATE/work-$pool" buildbox-worker \
    --bots-remote="http://$RS_HOST:$RS_PORT" --bots-instance="$RS_INSTANCE" \
    --cas-remote="unix:$sock" \
    --buildbox-run=/usr/bin/buildbox-run-hosttools \
    --runner-arg=--clearenv --runner-arg=--staging-mode=copy-or-link \
    --platform OSFamily=Linux --platform Pool="$pool" \
    --concurrent-jobs="$jobs" --max-wait-time=5 --graceful-shutdown-timeout=10 \
    --log-level=debug "polykern-$pool-0"
}
worker cpu "$RS_CPU_JOBS"
worker gpu 1

bots_up() {
  "$VENV/bin/python3" - "$DB_URL" <<'PY'
import sys
import sqlalchemy as sa
eng = sa.create_engine(sys.argv[1])
with eng.connect() as c:
    ids = {r[0] for r in c.execute(sa.text("select bot_id from bots"))}
sys.exit(0 if {"polykern-cpu-0", "polykern-gpu-0"} <= ids else 1)
PY
}
wait_for "both buildbox workers registering with BuildGrid" 60 bots_up

cat >"$RS_STATE/env" <<EOF
POLYKERN_REMOTE_PORT=$RS_PORT
POLYKERN_REMOTE_INSTANCE=$RS_INSTANCE
POLYKERN_REMOTE_VENV=$VENV
POLYKERN_REMOTE_TTL=$RS_TTL
EOF
rs_say "up in $((SECONDS - t0)) s: grpc://$RS_HOST:$RS_PORT instance '$RS_INSTANCE', workers polykern-cpu-0 \
(Pool=cpu) and polykern-gpu-0 (Pool=gpu); stops by itself after $RS_TTL s; state in $RS_STATE"

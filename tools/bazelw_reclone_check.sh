#!/usr/bin/env bash
# Check (called by tools/bazel_test.sh): bazelw works in a workspace that was deleted and cloned again
# at the same path, as CI does with each submission. bazelw's persistent mount namespace still holds
# the bind mount of the first, deleted folder; bazelw must replace it (before the fix Bazel stopped
# with "getcwd() failed"). The folder is outside /tmp, which the namespace shares as a whole.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
SRC="$PWD"
DIR="$(mktemp -d /var/tmp/polykern-reclone.XXXXXX)"
WS="$DIR/ws"
cleanup() { [ -x "$WS/bazelw" ] && (cd "$WS" && ./bazelw shutdown >/dev/null 2>&1); rm -rf "$DIR"; }
trap cleanup EXIT
for round in 1 2; do
  rm -rf "$WS"
  git clone -q --no-hardlinks "$SRC" "$WS" || { echo "reclone: git clone failed"; exit 1; }
  cp bazelw "$WS/bazelw"   # this checkout's bazelw, committed or not
  got="$(cd "$WS" && ./bazelw info workspace 2>&1)"
  if [ "$(tail -n1 <<<"$got")" != "$WS" ]; then
    echo "reclone: round $round: 'bazelw info workspace' in $WS printed:"; tail -n5 <<<"$got"; exit 1
  fi
  (cd "$WS" && ./bazelw shutdown >/dev/null 2>&1)
  echo "reclone: round $round: bazelw runs in $WS"
done

#!/bin/sh
# cross_build_aarch64.sh OUT SRC...: link libpolykern's sources and one tool (for Bazel's
# //native:kbin_run_aarch64; `make -C native aarch64` is the Makefile's way) for aarch64 with the
# Debian cross compiler. Without it, OUT becomes a script that explains and exits 77 (the
# emulation test skips with that message).
set -eu
out=$1; shift
cc=${AARCH64_CC:-aarch64-linux-gnu-gcc}
if ! command -v "$cc" >/dev/null 2>&1; then
  printf '#!/bin/sh\necho "no %s on the build host (Debian: gcc-aarch64-linux-gnu libc6-dev-arm64-cross)" >&2\nexit 77\n' \
    "$cc" >"$out"
  chmod +x "$out"
  exit 0
fi
inc="" srcs=""
for f in "$@"; do
  case "$f" in
    */tools/*.c) root=$(dirname "$(dirname "$f")"); inc="-I$root/include -I$root/src"; srcs="$srcs $f" ;;
    *.c) srcs="$srcs $f" ;;
  esac
done
"$cc" -std=c99 -D_POSIX_C_SOURCE=200809L -O2 $inc $srcs -o "$out" -lpthread -ldl -lm

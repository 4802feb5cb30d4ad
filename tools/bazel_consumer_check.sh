#!/usr/bin/env bash
# Check (called by tools/bazel_test.sh): a downstream Bazel project depends on polykern.
# examples/bazel_consumer is its own workspace (MODULE.bazel: bazel_dep(name = "polykern") with a
# local_path_override to this checkout; BUILD.bazel: polykern_kbin from @polykern//tools:kbin.bzl).
# bazelw, run from that folder, builds it there (the folder is in .bazelignore: polykern's own //...
# never sees it). The artifact must be reachable from the host through the consumer's bazel-bin link,
# hold the four device modules, and the compiler's report must say so. The consumer's Bazel server is
# shut down afterwards (one more JVM on a small host).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../examples/bazel_consumer" || exit 1
fail() { echo "bazel consumer: FAILED: $*"; ../../bazelw shutdown >/dev/null 2>&1; exit 1; }
../../bazelw build --curses=no --color=no --show_progress_rate_limit=30 //:vec_add ||
  fail "bazel build //:vec_add in examples/bazel_consumer"
kbin=bazel-bin/vec_add.kbin
report=bazel-bin/vec_add.compile.txt
[ -f "$kbin" ] || fail "$kbin does not resolve on the host ($(readlink bazel-bin || echo 'no bazel-bin link'))"
[ "$(head -c 8 "$kbin" | od -An -c | tr -s ' ')" = " P K B I N \0 \r \n" ] || fail "$kbin is not a polykern artifact"
want="kernels: vec_add; modules: llvm/o (fallback), opencl/cl (fallback), vulkan/spirv (fallback), cuda/ptx (fallback)"
grep -qF "$want" "$report" || { cat "$report"; fail "the report does not list the four modules built by the CPU-only compiler"; }
../../bazelw shutdown >/dev/null 2>&1 || true
echo "bazel consumer: examples/bazel_consumer built $kbin ($(wc -c <"$kbin") bytes) through @polykern//tools:kbin.bzl"

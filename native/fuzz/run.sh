#!/bin/sh
# Bounded fuzz run of the native .kbin reader (and the ELF loader), for CI:
#   native/fuzz/run.sh [SECONDS]      (default 60, or $FUZZ_SECONDS; split between targets)
# Seeds: tests/golden/*.kbin, any .kbin under $FUZZ_SEEDS, artifacts written by the C tests,
# and the ELF test objects. Exit 0: no crash; 1: a crash (reproducer in native/build-fuzz/);
# 77: libFuzzer is unavailable here (clang with compiler-rt, e.g. Debian libclang-rt-14-dev).
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-${FUZZ_SECONDS:-60}}
cd "$here"
if ! command -v "${FUZZ_CC:-clang}" >/dev/null 2>&1; then
    echo "fuzz: ${FUZZ_CC:-clang} not found; skipping" >&2; exit 77
fi
probe=$(mktemp -d)
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' > "$probe/p.c"
if ! "${FUZZ_CC:-clang}" -fsanitize=fuzzer,address "$probe/p.c" -o "$probe/p" 2>"$probe/log"; then
    echo "fuzz: ${FUZZ_CC:-clang} cannot link libFuzzer ($(tail -1 "$probe/log")); skipping" >&2
    rm -rf "$probe"; exit 77
fi
rm -rf "$probe"
make -s -f fuzz/fuzz.mk BUILD=build-fuzz
make -s BUILD=build all build/kobj/saxpy_range.o build/kobj/cc-pic.o build/kobj/cc-nopic.o \
    build/kobj/undefined_sym.o >/dev/null
work=build-fuzz/work
rm -rf "$work"; mkdir -p "$work/kbin" "$work/elf" build-fuzz/artifacts
for f in ../tests/golden/*.kbin ${FUZZ_SEEDS:+$(find "$FUZZ_SEEDS" -name '*.kbin')}; do
    [ -f "$f" ] && cp "$f" "$work/kbin/"
done
cp build/kobj/*.o "$work/elf/"
cp fuzz/regressions/elf-* "$work/elf/" 2>/dev/null || true
cp fuzz/regressions/kbin-* "$work/kbin/" 2>/dev/null || true
half=$((secs / 2)); [ "$half" -ge 1 ] || half=1
status=0
for t in kbin elf; do
    echo "fuzz: fuzz_$t for ${half}s from $(ls "$work/$t" | wc -l) seeds"
    if ! ./build-fuzz/fuzz_$t -max_total_time="$half" -timeout=10 -rss_limit_mb=2048 \
            -artifact_prefix=build-fuzz/artifacts/ -print_final_stats=1 "$work/$t" \
            >"build-fuzz/fuzz_$t.log" 2>&1; then
        echo "fuzz: fuzz_$t FOUND A CRASH; log: native/build-fuzz/fuzz_$t.log" >&2
        tail -40 "build-fuzz/fuzz_$t.log" >&2
        status=1
    else
        grep -E "stat::number_of_executed_units|^Done" "build-fuzz/fuzz_$t.log" | sed "s/^/fuzz: fuzz_$t: /"
    fi
done
exit $status

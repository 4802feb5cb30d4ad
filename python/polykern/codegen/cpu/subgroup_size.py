"""The subgroup size of the CPU backends (llvm, hexagon: :mod:`polykern.codegen.cpu.subgroups`), which the
IR interpreter (the oracle) also uses by default. Kept apart from the LLVM lowering so that what reads it
needs no llvmlite."""

#: Work-items per subgroup on the CPU (a power of two: lanes and masks are taken modulo it). 8 is the
#: f32 width of AVX2, and what Mesa's lavapipe reports on such hosts.
CPU_SUBGROUP_SIZE = 8

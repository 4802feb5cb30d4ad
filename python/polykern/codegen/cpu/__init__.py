"""Code generation only the CPU kinds (llvm, hexagon) use: the work-item loop, subgroups and
matrix fragments on the CPU, the target probe, the lazy assembly listing."""

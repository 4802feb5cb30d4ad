"""Shared code generators: the C-like source emitter (``c_*``) and the LLVM IR emitter (``llvm_*``, on
:mod:`.llvm_emitter`); ``cpu/`` is what only the CPU kinds (llvm, hexagon) use (docs/internals.md
"Package layout")."""

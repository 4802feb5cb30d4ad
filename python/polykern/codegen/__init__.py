"""Shared code generators: the C-like source emitter and the LLVM IR emitter."""

"""Conformance settings for the Hexagon backend (read by tests/runtimes.py; never imports the runtime).

UNCHECKED: the target kinds the conformance suite does not run again in checked mode
(``bounds_check=True``), with the reason: Hexagon's code generator is the LLVM emitter of the ``llvm``
kind, whose checked mode runs, and every launch here is a process under QEMU user-mode emulation.
"""
UNCHECKED = {"hexagon": "the llvm kind's LLVM emitter, run checked on llvm; each launch here is a QEMU process"}

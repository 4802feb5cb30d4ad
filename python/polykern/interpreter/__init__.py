"""The IR interpreter: a kernel's IR run in Python with the language's exact meaning, refusing what has
none (races, reads of uninitialized shared memory, out-of-bounds accesses, divergent barriers).

``program.Program`` is the entry; the fuzzer's oracle (``polykern.testing.interp``) and the runtime of
target ``interpret`` (``polykern.interpret``, docs/language.md "Debugging") both run it. The modules:
``values`` (typed scalar arithmetic), ``exprs`` and ``stmts`` (the closures), ``memory`` (buffers and the
Result), ``taint`` and ``sites`` (the static analyses the oracle judges with), ``subgroups``,
``fragments``, ``copies``, ``hopper`` (collectives, matrix fragments, asynchronous copies, Hopper).
"""

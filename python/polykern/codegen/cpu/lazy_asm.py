"""The assembly listing of an LLVM-compiled module (llvm, hexagon), produced lazily.

A build ships the optimized LLVM IR and the object; the ``asm`` source is rendered from that IR the
first time anything reads the module's sources (``sources``, ``inspect_source``, ``export``), because
emitting it costs as much as emitting the object and a build that is only launched or packaged never
needs it. The rendered text is the one an eager compile emits (:func:`.llvm_target.assemble_ll`).
"""
from __future__ import annotations

import threading
from typing import Dict, Mapping

__all__ = ["PendingAsm", "LazyAsmSources"]


class PendingAsm(str):
    """Stands in for the ``asm`` source until it is read: an empty string that carries the optimized IR
    and the target it was compiled for. Copying or pickling keeps it pending (with its IR)."""

    def __new__(cls, ll: str, triple: str, cpu: str, features: str, opt: int, disable_lsr: bool = False):
        obj = super().__new__(cls, "")
        obj.target = (ll, triple, cpu, features, opt, disable_lsr)
        return obj

    def __reduce__(self):  # str's default would rebuild it from "" and drop the IR
        return type(self), self.target

    def render(self) -> str:
        from ..llvm_target import assemble_ll  # llvmlite: only when the listing is read

        ll, triple, cpu, features, opt, disable_lsr = self.target
        return assemble_ll(ll, triple, cpu, features, opt, disable_lsr=disable_lsr)


class LazyAsmSources:
    """Mixin for modules whose ``sources`` may hold a :class:`PendingAsm`: reading ``sources`` renders
    it once (thread-safe); assigning stores the map as given. The lock is not part of the state that
    copy/pickle carry (a pending source stays pending)."""

    @property
    def sources(self) -> Dict[str, str]:
        state = self.__dict__
        src = state.get("_sources", {})
        if any(isinstance(v, PendingAsm) for v in src.values()):
            with state.setdefault("_sources_lock", threading.Lock()):
                src = state["_sources"]  # another thread may have rendered it meanwhile
                src = {k: v.render() if isinstance(v, PendingAsm) else v for k, v in src.items()}
                state["_sources"] = src
        return src

    @sources.setter
    def sources(self, value: Mapping[str, str]) -> None:
        self.__dict__["_sources_lock"] = threading.Lock()
        self.__dict__["_sources"] = dict(value)

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_sources_lock", None)
        return state

    def __setstate__(self, state) -> None:
        self.__dict__.update(state)
        self.__dict__["_sources_lock"] = threading.Lock()

"""The hexagon module a host without the emulated runtime builds: same bytes as the real module
(one serializer, ``DeviceModule.save_to_bytes``), inspectable, not runnable.

Its ``asm`` source is produced lazily: a build keeps the optimized LLVM IR (``llvm``) and the
object, and renders the assembly from that IR the first time the module's sources are read
(``sources``, ``inspect_source``, ``export``). Emitting Hexagon assembly costs as much as emitting
the object, and a build that is only linked or packaged never needs it.
"""
from __future__ import annotations

import threading
from typing import Dict, Mapping

from polykern.module import FallbackModule
from polykern.payload_formats import PayloadFormats

__all__ = ["PendingHexagonAsm", "PendingAsmSources", "HexagonFallbackModule"]


class PendingHexagonAsm(str):
    """The ``asm`` source before anything read it: an empty string that carries the optimized IR
    and the target it was compiled for. :meth:`render` gives the text an eager compile emits."""

    def __new__(cls, ll: str, triple: str, cpu: str, opt: int):
        obj = super().__new__(cls, "")
        obj.target = (ll, triple, cpu, opt)
        return obj

    def __reduce__(self):  # copy/pickle keep it pending (str's default would drop the IR)
        return type(self), self.target

    def render(self) -> str:
        from polykern.codegen.llvm_target import assemble_ll

        ll, triple, cpu, opt = self.target
        return assemble_ll(ll, triple, cpu, "", opt)


class PendingAsmSources:
    """Mixin for hexagon modules (fallback and emulated runtime): ``sources`` renders a pending
    ``asm`` once, on first read (thread-safe); assigning it stores the map as given."""

    @property
    def sources(self) -> Dict[str, str]:
        state = self.__dict__
        src = state.get("_sources", {})
        if any(isinstance(v, PendingHexagonAsm) for v in src.values()):
            with state["_sources_lock"]:
                src = state["_sources"]  # another thread may have rendered it meanwhile
                src = {k: v.render() if isinstance(v, PendingHexagonAsm) else v for k, v in src.items()}
                state["_sources"] = src
        return src

    @sources.setter
    def sources(self, value: Mapping[str, str]) -> None:
        self.__dict__["_sources_lock"] = threading.Lock()
        self.__dict__["_sources"] = dict(value)


class HexagonFallbackModule(PendingAsmSources, FallbackModule):
    """``inspect_source()`` shows the Hexagon assembly; ``inspect_source("llvm")`` the LLVM IR."""

    source_preference = ("asm", "llvm")
    #: The payloads these modules hold (the codegen writes them; the loaders accept only these).
    payload_formats = PayloadFormats("bytes", ("o",))

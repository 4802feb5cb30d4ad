"""The llvm module a host without the CPU runtime builds (or one built with
POLYKERN_COMPILE_FORCE_FALLBACK): same bytes as the real module, inspectable, not runnable.

Also the lazily produced assembly listing shared by the real and the fallback module: a build
ships the optimized IR (``ll``) and the object; the ``asm`` source is generated from that IR the
first time anything reads the module's sources (``inspect_source``, ``export``), because emitting
it costs as much as emitting the object and a build that is only launched never needs it.
"""
from __future__ import annotations

import threading
from typing import Dict, Mapping

from polykern.module import FallbackModule
from polykern.payload_formats import PayloadFormats

SOURCE_PREFERENCE = ("asm", "ll")

__all__ = ["SOURCE_PREFERENCE", "PendingAsm", "LazyAsmSources", "LLVMFallbackModule"]


class PendingAsm(str):
    """Stands in for the ``asm`` source until it is read: an empty string that remembers how to
    produce the listing (the optimized IR and the target it was compiled for)."""

    def __new__(cls, ll: str, triple: str, cpu: str, features: str, opt: int, disable_lsr: bool):
        obj = super().__new__(cls, "")
        obj.args = (ll, triple, cpu, features, opt)
        obj.disable_lsr = disable_lsr
        return obj

    def render(self) -> str:
        from polykern.codegen.llvm_target import assemble_ll

        ll, triple, cpu, features, opt = self.args
        return assemble_ll(ll, triple, cpu, features, opt, disable_lsr=self.disable_lsr)


class LazyAsmSources:
    """Mixin for modules whose ``sources`` may hold a :class:`PendingAsm`: reading ``sources``
    renders it once (thread-safe); writing stores the map as given."""

    @property
    def sources(self) -> Dict[str, str]:
        src = self.__dict__.get("_sources", {})
        if any(isinstance(v, PendingAsm) for v in src.values()):
            with self.__dict__.setdefault("_sources_lock", threading.Lock()):
                src = self.__dict__["_sources"]
                rendered = {k: v.render() if isinstance(v, PendingAsm) else v for k, v in src.items()}
                self.__dict__["_sources"] = src = rendered
        return src

    @sources.setter
    def sources(self, value: Mapping[str, str]) -> None:
        self.__dict__["_sources_lock"] = threading.Lock()
        self.__dict__["_sources"] = dict(value)


class LLVMFallbackModule(LazyAsmSources, FallbackModule):
    """``inspect_source()`` shows the assembly; ``inspect_source("ll")`` the optimized LLVM IR."""

    source_preference = SOURCE_PREFERENCE
    #: The payloads these modules hold (the codegen writes them; the loaders accept only these).
    payload_formats = PayloadFormats("bytes", ("o",))

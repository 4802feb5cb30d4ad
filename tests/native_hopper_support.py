"""What the Hopper tests of libpolykern share (tests/test_native_hopper.py, tests/test_launch_rules_native.py): a
tensor-map attribute, and libpolykern's Hopper launch plan called through ctypes on any host."""
from __future__ import annotations

import ctypes
import json

from native_support import PkError

GOOD_MAP = {"box": [128, 64], "buffer": "A", "elem": "f16", "name": "ta", "shape": ["M", "K"], "swizzle": 128}


def _maps(*maps) -> str:
    return json.dumps(list(maps), sort_keys=True, separators=(",", ":"))


class _Str(ctypes.Structure):
    _fields_ = [("ptr", ctypes.c_char_p), ("len", ctypes.c_size_t)]


class _KV(ctypes.Structure):
    _fields_ = [("key", _Str), ("value", _Str)]


class _Arg(ctypes.Structure):
    _fields_ = [("name", _Str), ("kind", ctypes.c_uint8), ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16), ("readonly", ctypes.c_uint8)]


class _Info(ctypes.Structure):
    _fields_ = [("name", _Str), ("num_args", ctypes.c_size_t), ("args", ctypes.POINTER(_Arg)),
                ("num_launch_tags", ctypes.c_size_t), ("launch_tags", ctypes.c_void_p),
                ("shared_bytes", ctypes.c_uint64), ("num_attrs", ctypes.c_size_t), ("attrs", ctypes.POINTER(_KV))]


def _s(text: str) -> _Str:
    b = text.encode()
    return _Str(b, len(b))


def _info(args, attrs) -> _Info:
    """A pk_function_info (native/include/polykern.h) of kernel 'k': args [(name, kind, code, bits)]."""
    a = (_Arg * len(args))(*[_Arg(_s(n), kind, code, bits, 1, 0) for n, kind, code, bits in args])
    kv = (_KV * len(attrs))(*[_KV(_s(k), _s(v)) for k, v in sorted(attrs.items())])
    info = _Info(_s("k"), len(args), a, 0, None, 0, len(attrs), kv)
    info._keep = (a, kv)
    return info


GEMM_ARGS = [("M", 0, 0, 32), ("N", 0, 0, 32), ("K", 0, 0, 32), ("A", 1, 2, 16), ("B", 1, 2, 16), ("C", 1, 2, 16)]


class _Plan:
    """pk_hopper_plan / pk_hopper_check_block / pk_hopper_encodings (native/src/tensor_maps.h): libpolykern's
    launch steps before the driver, called in the shared library on any host."""

    def __init__(self, clib, args, attrs):
        self.lib, self.info, self.err = clib.lib, _info(args, attrs), PkError()
        vp, err = ctypes.c_void_p, ctypes.POINTER(PkError)
        for name, res, argtypes in (("pk_hopper_plan", ctypes.c_int, [vp, ctypes.POINTER(vp), err]),
                                    ("pk_hopper_free", None, [vp]),
                                    ("pk_hopper_check_block", ctypes.c_int, [vp, vp, vp, err]),
                                    ("pk_hopper_encodings", ctypes.c_int, [vp, vp, vp, vp, vp, vp, err])):
            getattr(self.lib, name).restype, getattr(self.lib, name).argtypes = res, argtypes
        self.h = ctypes.c_void_p()
        self.rc = self.lib.pk_hopper_plan(ctypes.byref(self.info), ctypes.byref(self.h), ctypes.byref(self.err))

    def close(self):
        self.lib.pk_hopper_free(self.h)

    def block(self, *block):
        self.err = PkError()
        rc = self.lib.pk_hopper_check_block(self.h, ctypes.byref(self.info), (ctypes.c_uint32 * 3)(*block),
                                            ctypes.byref(self.err))
        return rc, self.err.message.decode()

    def encode(self, values, addrs, sizes):
        cells = [ctypes.c_int32(v) for v in values]
        argv = (ctypes.c_void_p * 6)(*[ctypes.addressof(c) for c in cells], None, None, None)
        enc = ctypes.create_string_buffer(4096 * 8)
        self.err = PkError()
        rc = self.lib.pk_hopper_encodings(self.h, ctypes.byref(self.info), argv, (ctypes.c_uint64 * 2)(*addrs),
                                          (ctypes.c_size_t * 2)(*sizes), enc, ctypes.byref(self.err))
        return rc, self.err.message.decode()


GEMM_MAPS = _maps(GOOD_MAP, {**GOOD_MAP, "name": "tb", "buffer": "B", "shape": ["N", "K"]})

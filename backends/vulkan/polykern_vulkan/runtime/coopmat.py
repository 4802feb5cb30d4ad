"""VK_KHR_cooperative_matrix on the device: whether shaders with matrix fragments can run, and which
(M, N, K, A, B, C, result types) the device multiplies at Subgroup scope.

``query`` runs once when the logical device is created (device.py): it returns the extension to
enable, the ``VkPhysicalDeviceCooperativeMatrixFeaturesKHR`` struct to chain (with
``cooperativeMatrix`` on), the device's combinations, or why there are none (no extension, as on
Mesa 22.3's lavapipe; no Vulkan 1.2, whose memory model the extension needs). ``check`` refuses a
kernel, naming what it needs, when the device cannot run it (runtime/program.py).

bf16 fragments (SPV_KHR_bfloat16's bfloat16 component) also need VK_KHR_shader_bfloat16 with its
``shaderBFloat16Type`` and ``shaderBFloat16CooperativeMatrix`` features: ``query`` enables them where the
device offers them, and drops the device's bf16 combinations (with the reason, for ``check``) where it
does not. The feature struct is newer than the python binding: it is laid out by hand (``_bf16_features``)."""
from __future__ import annotations

from typing import FrozenSet, List, Optional, Tuple

import vulkan as vk

from polykern.errors import DeviceError

__all__ = ["EXTENSION", "Support", "query", "check"]

EXTENSION = "VK_KHR_cooperative_matrix"
SCOPE_SUBGROUP = 3
#: VkComponentTypeKHR -> polykern type name (BFLOAT16_KHR is 1000141000)
COMPONENTS = {0: "f16", 1: "f32", 2: "f64", 3: "i8", 4: "i16", 5: "i32", 6: "i64", 7: "u8", 8: "u16",
              9: "u32", 10: "u64", 1000141000: "bf16"}

Combo = Tuple[int, int, int, Tuple[str, str, str, str]]


BF16_EXTENSION = "VK_KHR_shader_bfloat16"
#: VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_BFLOAT16_FEATURES_KHR
BF16_FEATURES_STYPE = 1000141000


class Support:
    """What the device offers: ``combos`` (empty with ``missing`` set when it offers nothing);
    ``bf16_missing``: why bf16 combinations are unavailable (None when they are)."""

    def __init__(self, combos: FrozenSet[Combo] = frozenset(), missing: Optional[str] = None,
                 extensions: Tuple[str, ...] = (), feature=None, bf16_missing: Optional[str] = None, keep=()):
        self.combos, self.missing, self.extensions, self.feature = combos, missing, extensions, feature
        self.bf16_missing, self.keep = bf16_missing, keep  # keep: hand-made structs the chain points to

    def without_bf16(self, why: str) -> "Support":
        """The same support less bf16: its combinations, VK_KHR_shader_bfloat16 and its feature struct
        (``why`` is kept for ``check``). device.py falls back to it where vkCreateDevice refuses bf16."""
        if self.feature is not None:
            self.feature.pNext = vk.ffi.NULL
        return Support(frozenset(c for c in self.combos if "bf16" not in c[3]), self.missing,
                       tuple(e for e in self.extensions if e != BF16_EXTENSION), self.feature, why)

    @property
    def uses_bf16(self) -> bool:
        return BF16_EXTENSION in self.extensions

    def describe(self) -> str:
        return ", ".join(f"{m}x{n}x{k} {','.join(t)}" for m, n, k, t in sorted(self.combos)) or "none"


def _bf16_features():
    """A zeroed VkPhysicalDeviceShaderBfloat16FeaturesKHR: sType (offset 0), pNext (8), then the VkBool32s
    shaderBFloat16Type (16), shaderBFloat16DotProduct (20), shaderBFloat16CooperativeMatrix (24); 32
    bytes, pointer-aligned (two VkBaseOutStructures). Returns (struct as void*, its three flags, owner)."""
    raw = vk.ffi.new("VkBaseOutStructure[2]")
    raw[0].sType = BF16_FEATURES_STYPE
    flags = vk.ffi.cast("uint32_t *", vk.ffi.addressof(raw[1]))
    return vk.ffi.cast("void *", raw), flags, raw


def enumerate_properties(instance_handle, physical_handle, function: str, struct: str, stype: int) -> list:
    """An instance-level ``VkResult f(VkPhysicalDevice, uint32_t*, T*)`` enumeration, called through
    vkGetInstanceProcAddr with every element's ``sType`` set (the python binding's own wrapper passes
    zeroed structs, which the valid usage of such queries forbids)."""
    addr = vk.lib.vkGetInstanceProcAddr(instance_handle, vk.ffi.new("char[]", function.encode()))
    if addr == vk.ffi.NULL:
        raise RuntimeError(f"{function} is not exported by the Vulkan loader")
    fn = vk.ffi.cast(f"PFN_{function}", addr)
    count = vk.ffi.new("uint32_t*")
    if fn(physical_handle, count, vk.ffi.NULL) != vk.VK_SUCCESS:
        raise RuntimeError(f"{function} failed to count")
    items = vk.ffi.new(f"{struct}[]", count[0])
    for i in range(count[0]):
        items[i].sType = stype
    result = fn(physical_handle, count, items)
    if result not in (vk.VK_SUCCESS, vk.VK_INCOMPLETE):
        raise RuntimeError(f"{function} returned {result}")
    return [items[i] for i in range(count[0])]


def _query_bf16(physical_handle, names):
    """(why bf16 fragments are unavailable or None, the feature struct to chain with exactly
    shaderBFloat16Type and shaderBFloat16CooperativeMatrix on, its owner). Its own query: a failure here
    leaves the other fragment types usable."""
    if BF16_EXTENSION not in names:
        return f"the device does not offer {BF16_EXTENSION}", None, None
    try:
        struct, flags, raw = _bf16_features()
        top = vk.VkPhysicalDeviceFeatures2(sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, pNext=struct)
        vk.vkGetPhysicalDeviceFeatures2(physical_handle, top)
    except Exception as e:  # noqa: BLE001 - a binding or driver failure: no bf16 fragments, and why
        return f"querying {BF16_EXTENSION} failed ({type(e).__name__}: {e})", None, None
    if not (flags[0] and flags[2]):
        return f"the device offers {BF16_EXTENSION} without shaderBFloat16Type/CooperativeMatrix", None, None
    flags[0], flags[1], flags[2] = 1, 0, 1  # the dot-product feature stays off
    vk.ffi.cast("VkBaseOutStructure *", struct).pNext = vk.ffi.NULL
    return None, struct, raw


def query(instance_handle, physical_handle, api) -> Support:
    names = {e.extensionName for e in vk.vkEnumerateDeviceExtensionProperties(physical_handle, None)}
    if EXTENSION not in names:
        return Support(missing=f"the device does not offer {EXTENSION}")
    if api < (1, 2):
        return Support(missing=f"{EXTENSION} needs the Vulkan memory model of Vulkan 1.2; the device runs "
                               f"Vulkan {api[0]}.{api[1]}")
    try:
        feat = vk.VkPhysicalDeviceCooperativeMatrixFeaturesKHR(
            sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR)
        top = vk.VkPhysicalDeviceFeatures2(sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, pNext=feat)
        vk.vkGetPhysicalDeviceFeatures2(physical_handle, top)
        if not feat.cooperativeMatrix:
            return Support(missing=f"the device offers {EXTENSION} but not its cooperativeMatrix feature")
        props = enumerate_properties(instance_handle, physical_handle,
                                     "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR",
                                     "VkCooperativeMatrixPropertiesKHR",
                                     vk.VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR)
    except Exception as e:  # noqa: BLE001 - a binding or driver failure: no fragments, and why
        return Support(missing=f"querying {EXTENSION} failed ({type(e).__name__}: {e})")
    combos = set()
    for p in props:
        if int(p.scope) != SCOPE_SUBGROUP:
            continue
        types = tuple(COMPONENTS.get(int(t), f"component {int(t)}")
                      for t in (p.AType, p.BType, p.CType, p.ResultType))
        combos.add((int(p.MSize), int(p.NSize), int(p.KSize), types))
    bf16_missing, bf16, bf16_raw = _query_bf16(physical_handle, names)
    extensions = (EXTENSION,)
    if bf16_missing is None:
        extensions += (BF16_EXTENSION,)
    else:
        combos = {c for c in combos if "bf16" not in c[3]}
    enable = vk.VkPhysicalDeviceCooperativeMatrixFeaturesKHR(
        sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR, cooperativeMatrix=vk.VK_TRUE,
        **({"pNext": bf16} if bf16 is not None else {}))
    return Support(frozenset(combos), None, extensions, enable, bf16_missing, (bf16_raw,))


def check(kernel: str, device_name: str, support: Support, needs) -> None:
    """DeviceError unless ``support`` covers every (M, N, K, types) in ``needs``."""
    if support.missing is not None:
        raise DeviceError(f"kernel '{kernel}' uses matrix fragments (SPV_KHR_cooperative_matrix), which "
                          f"{device_name} cannot run: {support.missing}; build it for llvm (or cuda/nvptx on "
                          "NVIDIA) instead", name="VK_ERROR_EXTENSION_NOT_PRESENT")
    for m, n, k, types in needs:
        if (m, n, k, types) not in support.combos:
            why = (f" (bf16 fragments need {BF16_EXTENSION}: {support.bf16_missing})"
                   if "bf16" in types and support.bf16_missing else "")
            raise DeviceError(f"kernel '{kernel}' multiplies {m}x{n}x{k} {','.join(types)} (A,B,C,result) "
                              f"fragments, which {device_name} does not list in its "
                              f"VkCooperativeMatrixPropertiesKHR (Subgroup scope: {support.describe()}){why}",
                              name="VK_ERROR_FEATURE_NOT_PRESENT")


def needs_of(attrs) -> List[Combo]:
    """The combinations a kernel records in its ``cooperative_matrix`` attribute (spirv_matrix.py)."""
    out = []
    for item in filter(None, (attrs.get("cooperative_matrix", "") or "").split(";")):
        shape, types = item.split(":")
        m, n, k = (int(x) for x in shape.split("x"))
        out.append((m, n, k, tuple(types.split(","))))
    return out

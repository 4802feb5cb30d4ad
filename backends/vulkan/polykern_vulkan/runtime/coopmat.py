"""VK_KHR_cooperative_matrix on the device: whether shaders with matrix fragments can run, and which
(M, N, K, A, B, C, result types) the device multiplies at Subgroup scope.

``query`` runs once when the logical device is created (device.py): it returns the extension to
enable, the ``VkPhysicalDeviceCooperativeMatrixFeaturesKHR`` struct to chain (with
``cooperativeMatrix`` on), the device's combinations, or why there are none (no extension, as on
Mesa 22.3's lavapipe; no Vulkan 1.2, whose memory model the extension needs). ``check`` refuses a
kernel, naming what it needs, when the device cannot run it (runtime/program.py)."""
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


class Support:
    """What the device offers: ``combos`` (empty with ``missing`` set when it offers nothing)."""

    def __init__(self, combos: FrozenSet[Combo] = frozenset(), missing: Optional[str] = None,
                 extensions: Tuple[str, ...] = (), feature=None):
        self.combos, self.missing, self.extensions, self.feature = combos, missing, extensions, feature

    def describe(self) -> str:
        return ", ".join(f"{m}x{n}x{k} {','.join(t)}" for m, n, k, t in sorted(self.combos)) or "none"


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
    enable = vk.VkPhysicalDeviceCooperativeMatrixFeaturesKHR(
        sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR, cooperativeMatrix=vk.VK_TRUE)
    return Support(frozenset(combos), None, (EXTENSION,), enable)


def check(kernel: str, device_name: str, support: Support, needs) -> None:
    """DeviceError unless ``support`` covers every (M, N, K, types) in ``needs``."""
    if support.missing is not None:
        raise DeviceError(f"kernel '{kernel}' uses matrix fragments (SPV_KHR_cooperative_matrix), which "
                          f"{device_name} cannot run: {support.missing}; build it for llvm (or cuda/nvptx on "
                          "NVIDIA) instead", name="VK_ERROR_EXTENSION_NOT_PRESENT")
    for m, n, k, types in needs:
        if (m, n, k, types) not in support.combos:
            raise DeviceError(f"kernel '{kernel}' multiplies {m}x{n}x{k} {','.join(types)} (A,B,C,result) "
                              f"fragments, which {device_name} does not list in its "
                              f"VkCooperativeMatrixPropertiesKHR (Subgroup scope: {support.describe()})",
                              name="VK_ERROR_FEATURE_NOT_PRESENT")


def needs_of(attrs) -> List[Combo]:
    """The combinations a kernel records in its ``cooperative_matrix`` attribute (spirv_matrix.py)."""
    out = []
    for item in filter(None, (attrs.get("cooperative_matrix", "") or "").split(";")):
        shape, types = item.split(":")
        m, n, k = (int(x) for x in shape.split("x"))
        out.append((m, n, k, tuple(types.split(","))))
    return out

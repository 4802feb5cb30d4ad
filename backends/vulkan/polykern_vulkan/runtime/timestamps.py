"""GPU time of launches, measured on the device with timestamp queries (opt-in).

With ``POLYKERN_VK_TIMESTAMPS=1`` in the environment, or ``Device.set_timestamps(True)``, every
command buffer the device executes writes a timestamp after the previous work is done (before its
first command) and one after its last command (``vkCmdWriteTimestamp`` at ALL_COMMANDS), and the
difference, in ticks of ``timestampPeriod`` nanoseconds and masked to the queue family's
``timestampValidBits``, is added to ``Device.gpu_seconds`` once its fence has signalled. This is the
Vulkan counterpart of CUDA events around a launch: device time without the host's submit and wait.
A launch with host (NumPy) arrays counts its staging copies too; with ``DeviceArray`` arguments it
is the dispatch alone. Off by default: the default launch path records no query.
"""
from __future__ import annotations

import os

import vulkan as vk

from .vkresult import vk_call

__all__ = ["TIMESTAMPS_ENV", "TimestampQueries", "env_wants_timestamps", "support_problem"]

TIMESTAMPS_ENV = "POLYKERN_VK_TIMESTAMPS"
STAGE = vk.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT
RESULT_FLAGS = vk.VK_QUERY_RESULT_64_BIT | vk.VK_QUERY_RESULT_WAIT_BIT


def env_wants_timestamps() -> bool:
    return os.environ.get(TIMESTAMPS_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def support_problem(name: str, valid_bits: int, period_ns: float) -> str:
    """Why this device's compute queue cannot time launches ('' when it can)."""
    if valid_bits <= 0:
        return f"{name}'s compute queue family has timestampValidBits = 0 (no timestamp queries)"
    if period_ns <= 0:
        return f"{name} reports timestampPeriod = {period_ns}"
    return ""


class TimestampQueries:
    """A query pool of two timestamps for one command context."""

    def __init__(self, device_handle, valid_bits: int, period_ns: float):
        self.device = device_handle
        self.mask = (1 << valid_bits) - 1 if valid_bits < 64 else (1 << 64) - 1
        self.period_ns = period_ns
        self.pool = vk.vkCreateQueryPool(device_handle, vk.VkQueryPoolCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO, queryType=vk.VK_QUERY_TYPE_TIMESTAMP, queryCount=2),
            None)
        self._data = vk.ffi.new("uint64_t[2]")

    def start(self, cmd) -> None:
        vk.vkCmdResetQueryPool(cmd, self.pool, 0, 2)
        vk.vkCmdWriteTimestamp(cmd, STAGE, self.pool, 0)

    def stop(self, cmd) -> None:
        vk.vkCmdWriteTimestamp(cmd, STAGE, self.pool, 1)

    def seconds(self) -> float:
        """The time between the two timestamps (call after the command buffer's fence signalled)."""
        with vk_call("reading the launch's timestamp queries"):
            vk.vkGetQueryPoolResults(self.device, self.pool, 0, 2, 16, self._data, 8, RESULT_FLAGS)
        ticks = (int(self._data[1]) - int(self._data[0])) & self.mask
        return ticks * self.period_ns * 1e-9

    def destroy(self) -> None:
        vk.vkDestroyQueryPool(self.device, self.pool, None)

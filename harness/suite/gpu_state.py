"""GPU state through NVML (nvidia-ml-py, imported as pynvml), when it is installed.

Per sample: the SM clock right after the sample, so a throttled sample can be discarded (nvbench's
rule: below 75 % of the default application clock), and, where that clock is under the GPU's maximum,
whether the power limit holds it there (``power_capped``; suite 0.8). Around a measurement: clock-event
(throttle) reasons and the power/thermal violation counters, as deltas.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

try:
    import pynvml
except ImportError:  # the suite runs without NVML; clocks are then not recorded
    pynvml = None

THROTTLE_FRACTION = 0.75
# clock-event reasons of the power limit: nvmlClocksEventReasonSwPowerCap, ...HwPowerBrakeSlowdown
POWER_REASONS = 0x4 | 0x80


class GpuState:
    def __init__(self, index: int) -> None:
        self.handle = None
        self.min_sm_mhz: float | None = None
        self.max_sm_mhz: int | None = None
        self.missing: str | None = None  # why NVML is not there, for the result's warnings
        if pynvml is None:
            self.missing = "nvidia-ml-py (pynvml) is not installed in this Python"
            return
        try:
            pynvml.nvmlInit()
            self.handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            default = pynvml.nvmlDeviceGetDefaultApplicationsClock(self.handle, pynvml.NVML_CLOCK_SM)
            self.min_sm_mhz = THROTTLE_FRACTION * default
            self.max_sm_mhz = int(pynvml.nvmlDeviceGetMaxClockInfo(self.handle, pynvml.NVML_CLOCK_SM))
        except pynvml.NVMLError as exc:
            self.handle = None
            self.missing = f"NVML did not answer ({exc})"

    @property
    def available(self) -> bool:
        return self.handle is not None

    def sm_clock_mhz(self) -> int | None:
        if self.handle is None:
            return None
        try:
            return int(pynvml.nvmlDeviceGetClockInfo(self.handle, pynvml.NVML_CLOCK_SM))
        except pynvml.NVMLError:
            return None

    def power_capped(self, clock_mhz: int) -> bool:
        """Whether the power limit holds the SM clock (``clock_mhz``, just read) under the GPU's maximum.

        The clock is compared first: the reasons are read only for a clock already under the maximum,
        and a reason set while the clock holds costs nothing."""
        if self.handle is None or self.max_sm_mhz is None or clock_mhz >= self.max_sm_mhz:
            return False
        try:
            return bool(pynvml.nvmlDeviceGetCurrentClocksEventReasons(self.handle) & POWER_REASONS)
        except pynvml.NVMLError:
            return False

    def snapshot(self) -> dict[str, Any]:
        """Counters and state worth diffing around a measurement."""
        if self.handle is None:
            return {}
        found: dict[str, Any] = {}
        h = self.handle
        readings: dict[str, Callable[[], object]] = {
            "clock_event_reasons": lambda: pynvml.nvmlDeviceGetCurrentClocksEventReasons(h),
            "temperature_c": lambda: pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU),
            "power_w": lambda: pynvml.nvmlDeviceGetPowerUsage(h) / 1000,
            "power_violation_ns": lambda: _violation_ns(h, pynvml.NVML_PERF_POLICY_POWER),
            "thermal_violation_ns": lambda: _violation_ns(h, pynvml.NVML_PERF_POLICY_THERMAL),
        }
        for name, call in readings.items():
            try:
                found[name] = call()
            except pynvml.NVMLError:
                found[name] = None
        return found

    def static(self) -> dict[str, Any]:
        """What decides the numbers and does not change during a run."""
        if self.handle is None:
            return {"nvml": False}
        found: dict[str, Any] = {"nvml": True}
        calls: dict[str, Callable[[], object]] = {
            "power_limit_w": lambda: pynvml.nvmlDeviceGetEnforcedPowerLimit(self.handle) / 1000,
            "persistence_mode": lambda: bool(pynvml.nvmlDeviceGetPersistenceMode(self.handle)),
            "ecc_enabled": lambda: bool(pynvml.nvmlDeviceGetEccMode(self.handle)[0]),
            "mig_enabled": lambda: bool(pynvml.nvmlDeviceGetMigMode(self.handle)[0]),
            "default_sm_clock_mhz": lambda: pynvml.nvmlDeviceGetDefaultApplicationsClock(
                self.handle, pynvml.NVML_CLOCK_SM
            ),
            "max_sm_clock_mhz": lambda: pynvml.nvmlDeviceGetMaxClockInfo(self.handle, pynvml.NVML_CLOCK_SM),
            "max_mem_clock_mhz": lambda: pynvml.nvmlDeviceGetMaxClockInfo(self.handle, pynvml.NVML_CLOCK_MEM),
            "driver_version": lambda: pynvml.nvmlSystemGetDriverVersion(),
        }
        for name, call in calls.items():
            try:
                found[name] = call()
            except pynvml.NVMLError:
                found[name] = None
        return found


def _violation_ns(handle: object, policy: int) -> int:
    """Nanoseconds the GPU has been held back by ``policy`` (power or thermal) since the driver loaded."""
    return int(pynvml.nvmlDeviceGetViolationStatus(handle, policy).violationTime)


def delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    if not before or not after:
        return {}
    out: dict[str, Any] = {
        "clock_event_reasons_after": after.get("clock_event_reasons"),
        "temperature_c": [before.get("temperature_c"), after.get("temperature_c")],
    }
    for name in ("power_violation_ns", "thermal_violation_ns"):
        if before.get(name) is not None and after.get(name) is not None:
            out[name] = after[name] - before[name]
    return out

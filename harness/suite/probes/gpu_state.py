"""GPU state through NVML (nvidia-ml-py, imported as pynvml), when it is installed.

Per sample: the SM clock right after the sample, so a throttled sample can be discarded (nvbench's
rule: below 75 % of the default application clock), and, where that clock is under the GPU's maximum,
whether the power limit holds it there (``power_capped``; suite 0.8). Around a measurement: clock-event
(throttle) reasons and the power/thermal violation counters, as deltas.

NVML numbers every GPU of the host and ignores ``CUDA_VISIBLE_DEVICES``, so CUDA's device 0 in a run
pinned to the host's GPU 3 is NVML's device 3: the GPU is found by the UUID CUDA gives it
(``nvml_device``), and without one through ``CUDA_VISIBLE_DEVICES``. Reading another GPU's clock would
discard samples because that GPU idles, or rest this one for another's power limit.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TypedDict, TypeVar

from harness.suite.document import GpuStateDelta

try:
    import pynvml
except ImportError:  # the suite runs without NVML; clocks are then not recorded
    pynvml = None

T = TypeVar("T")

THROTTLE_FRACTION = 0.75
# clock-event reasons of the power limit: nvmlClocksEventReasonSwPowerCap, ...HwPowerBrakeSlowdown
POWER_REASONS = 0x4 | 0x80


class Snapshot(TypedDict, total=False):
    """NVML's counters at one moment (empty without NVML); None where NVML did not answer."""

    clock_event_reasons: int | None
    temperature_c: int | None
    power_w: float | None
    power_violation_ns: int | None
    thermal_violation_ns: int | None


def nvml_device(index: int, uuid: str | None, visible: str | None) -> str | int | None:
    """How NVML names CUDA's device ``index``: its UUID (``GPU-...``) where CUDA gave one, else the
    host's index that ``CUDA_VISIBLE_DEVICES`` (``visible``; None: unset) maps it to; None where that
    cannot be told (the variable names devices by UUID or MIG instance, or has fewer entries)."""
    if uuid:
        return uuid if uuid.startswith(("GPU-", "MIG-")) else f"GPU-{uuid}"
    if visible is None:
        return index
    entries = [e.strip() for e in visible.split(",") if e.strip()]
    if index < len(entries) and entries[index].isdigit():
        return int(entries[index])
    return None


class GpuState:
    def __init__(self, index: int, uuid: str | None = None) -> None:
        """NVML's view of CUDA's device ``index``, whose UUID (``uuid``, as torch gives it) names it to
        NVML; without one, ``CUDA_VISIBLE_DEVICES`` maps the index."""
        self.handle = None
        self.min_sm_mhz: float | None = None
        self.max_sm_mhz: int | None = None
        self.missing: str | None = None  # why NVML is not there, for the result's warnings
        self.nvml_uuid: str | None = None  # the device NVML reads, as NVML names it
        if pynvml is None:
            self.missing = "nvidia-ml-py (pynvml) is not installed in this Python"
            return
        device = nvml_device(index, uuid, os.environ.get("CUDA_VISIBLE_DEVICES"))
        if device is None:
            self.missing = (
                f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')!r} does not say which of the "
                f"host's GPUs CUDA's device {index} is"
            )
            return
        try:
            pynvml.nvmlInit()
            if isinstance(device, str):  # bytes: what every binding's ctypes call takes
                self.handle = pynvml.nvmlDeviceGetHandleByUUID(device.encode())
            else:
                self.handle = pynvml.nvmlDeviceGetHandleByIndex(device)
            self.nvml_uuid = _read(lambda: _text(pynvml.nvmlDeviceGetUUID(self.handle)))
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

    def snapshot(self) -> Snapshot:
        """Counters and state worth diffing around a measurement."""
        if self.handle is None:
            return {}
        h = self.handle
        return {
            "clock_event_reasons": _read(lambda: pynvml.nvmlDeviceGetCurrentClocksEventReasons(h)),
            "temperature_c": _read(lambda: pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU)),
            "power_w": _read(lambda: pynvml.nvmlDeviceGetPowerUsage(h) / 1000),
            "power_violation_ns": _read(lambda: _violation_ns(h, pynvml.NVML_PERF_POLICY_POWER)),
            "thermal_violation_ns": _read(lambda: _violation_ns(h, pynvml.NVML_PERF_POLICY_THERMAL)),
        }

    def static(self) -> dict[str, object]:
        """What decides the numbers and does not change during a run."""
        if self.handle is None:
            return {"nvml": False}
        found: dict[str, object] = {"nvml": True, "uuid": self.nvml_uuid}
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


def _text(value: str | bytes) -> str:
    """NVML's strings, which older bindings return as bytes."""
    return value.decode() if isinstance(value, bytes) else value


def _violation_ns(handle: object, policy: int) -> int:
    """Nanoseconds the GPU has been held back by ``policy`` (power or thermal) since the driver loaded."""
    return int(pynvml.nvmlDeviceGetViolationStatus(handle, policy).violationTime)


def _read(call: Callable[[], T]) -> T | None:
    try:
        return call()
    except pynvml.NVMLError:
        return None


def _grown(before: int | None, after: int | None) -> int | None:
    return None if before is None or after is None else after - before


def delta(before: Snapshot, after: Snapshot) -> GpuStateDelta:
    if not before or not after:
        return {}
    out: GpuStateDelta = {
        "clock_event_reasons_after": after.get("clock_event_reasons"),
        "temperature_c": [before.get("temperature_c"), after.get("temperature_c")],
    }
    power = _grown(before.get("power_violation_ns"), after.get("power_violation_ns"))
    if power is not None:
        out["power_violation_ns"] = power
    thermal = _grown(before.get("thermal_violation_ns"), after.get("thermal_violation_ns"))
    if thermal is not None:
        out["thermal_violation_ns"] = thermal
    return out

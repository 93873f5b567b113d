"""A row timed in windows spread across its process: on a CPU its contended windows set aside, on a GPU
every window kept, so the row's samples come from several placements in memory.

On a GPU, where a measurement's inputs, outputs and workspaces lie moves its median: two measurements of
one row in one process, with other rows between them, differ as much as two processes do (issue 34's
probes, docs/method.md). So the suite passes over its rows at least ``settings.windows`` times, each row
built again and timed for its share of the time budget in each pass, and the row's samples are those of
every window: its median averages the placements instead of holding one. How much a row's placements
move it differs from row to row, so a row gets further windows, up to ``settings.windows_max``, while the
relative standard error of its window medians' mean is above ``settings.window_target``
(``wants_another``): a quiet row stops at the least, a noisy one averages more placements.

On a CPU, a virtual machine shares its host's cores, caches and memory with other tenants. They slow a
core in stretches of seconds that nothing inside the machine shows (no steal time, no load): one window
of a row can read 20 to 60 % slow in one process and not in the next, and two processes of the same code
disagree far beyond any threshold. So on a CPU the suite passes over its rows ``WINDOWS`` times, each
row timed for its share of the time budget in each pass. Contention only ever slows a window; the
windows whose median lies within ``TOLERANCE`` of the fastest window's are the host's own speed and
are kept, the others are counted (``contended_discarded``, samples) and their medians recorded
(``window_medians_s``). Standard library only.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Literal, NamedTuple

from harness.suite.document import Measurement
from harness.suite.settings import SuiteSettings
from harness.suite.timing.summary import summarize

WINDOWS = 5  # on a CPU
TOLERANCE = 0.02  # on a CPU, a kept window's median is at most 2 % above the fastest window's
TIMES: tuple[Literal["wall_s", "sampling_wall_s"], ...] = ("wall_s", "sampling_wall_s")  # summed over windows
# what every window counts, summed over them
COUNTS: tuple[
    Literal["throttled_discarded", "power_capped_discarded", "idle_discarded", "warmup_calls"], ...
] = ("throttled_discarded", "power_capped_discarded", "idle_discarded", "warmup_calls")


class Windows(NamedTuple):
    """How a process times its rows: at least ``per_row`` windows a row, at most ``most`` (at most
    ``per_row``: exactly that many), more while the relative standard error of the window medians' mean
    is above ``target``; windows whose median lies more than ``tolerance`` above the fastest window's are
    set aside (None: every window is kept)."""

    per_row: int
    tolerance: float | None
    most: int = 0
    target: float = 0.0

    @property
    def passes(self) -> int:
        """The most passes over the rows a process makes."""
        return max(self.per_row, self.most)

    @property
    def expected(self) -> int:
        """The windows a row is counted at before its own say how many it takes: one past the least
        where more may come."""
        return self.per_row if self.passes == self.per_row else self.per_row + 1


def for_device(device: str, settings: SuiteSettings | None = None) -> Windows:
    """A CPU's ``WINDOWS`` windows set contended ones aside; a GPU's are all kept (placements, not
    tenants), as many as ``settings`` ask."""
    if device == "cpu":
        return Windows(WINDOWS, TOLERANCE)
    given = settings or SuiteSettings()
    return Windows(given.windows, None, max(given.windows, given.windows_max), given.window_target)


def wants_another(medians: Sequence[float], plan: Windows) -> bool:
    """Whether a row whose windows so far read ``medians`` gets another: always under ``plan.per_row``,
    never at ``plan.passes``; between them while the relative standard error of the medians' mean is
    above ``plan.target``."""
    n = len(medians)
    if n < plan.per_row:
        return True
    if n >= plan.passes:
        return False
    if n < 2:
        return True  # one window says nothing of its spread
    mean = math.fsum(medians) / n
    if mean <= 0:
        return False
    return statistics.stdev(medians) / math.sqrt(n) / mean > plan.target


def merge(windows: list[Measurement], tolerance: float | None = TOLERANCE) -> Measurement:
    """One row's measurement from its windows (in the order they ran): the first window's records
    with the samples of the kept windows, their statistics, and the time and discarded samples of
    every window. A row that failed or was unsupported in any window is that window's entry."""
    failed = [w for w in windows if w.get("status") != "ok"]
    if failed:
        return failed[0]
    medians = [float(w["stats"]["median"]) for w in windows]
    fastest = min(medians)
    kept = [
        w
        for w, m in zip(windows, medians, strict=True)
        if tolerance is None or m <= fastest * (1 + tolerance)
    ]
    entry = windows[0].copy()
    entry["samples_s"] = [s for w in kept for s in w["samples_s"]]
    if all("other_samples_s" in w for w in kept):  # on a CPU: the same calls in the other clock
        entry["other_samples_s"] = [s for w in kept for s in w["other_samples_s"]]
    if all(w.get("sm_clock_mhz") is not None for w in kept):
        entry["sm_clock_mhz"] = [c for w in kept for c in w["sm_clock_mhz"] or ()]  # none is None here
    entry["stats"] = summarize(entry["samples_s"])
    entry["window_medians_s"] = medians
    entry["contended_discarded"] = sum(len(w["samples_s"]) for w in windows if w not in kept)
    for key in TIMES:
        entry[key] = sum(float(w.get(key) or 0.0) for w in windows)
    for count in COUNTS:
        if count in entry:
            entry[count] = sum(int(w.get(count) or 0) for w in windows)
    if all("placement_pads_mib" in w for w in windows):
        entry["placement_pads_mib"] = [pad for w in windows for pad in w["placement_pads_mib"]]
    stranded = [int(w["memory_stranded_bytes"]) for w in windows if "memory_stranded_bytes" in w]
    if stranded:
        entry["memory_stranded_bytes"] = max(stranded)
    phases: dict[str, float] = {}
    for w in windows:
        for phase, seconds in (w.get("phases_s") or {}).items():
            phases[phase] = phases.get(phase, 0.0) + seconds
    entry["phases_s"] = phases
    scale = float(windows[0]["stats"]["median"]) / float(entry["stats"]["median"])
    for rate in ("tflops", "gbps", "pct_of_peak_flops", "pct_of_peak_bandwidth"):
        if rate in entry:  # rates follow the row's median
            entry[rate] = entry[rate] * scale
    return entry


def spread(medians: object) -> float | None:
    """How far apart a measurement's windows came: the slowest window's median over the fastest's, less 1;
    None without windows (before suite 0.12 on a CPU, 0.15 on a GPU) or with one."""
    if not isinstance(medians, list) or len(medians) < 2 or min(medians) <= 0:
        return None
    return float(max(medians) / min(medians) - 1)


def two_speeds(apart: float | None, capped: object, threshold_pct: float) -> bool:
    """Whether a GPU measurement ran at two speeds: its windows came ``threshold_pct`` or more apart
    (``apart``: ``spread``'s) while the power limit held the clock (``capped``: the samples it dropped,
    ``power_capped_discarded``). The limit acts faster than the clock can be read, so some samples it
    slowed are kept, and the measurement's median sits wherever its windows fell."""
    try:
        gap, dropped = float(apart), float(capped)  # type: ignore[arg-type]  # None: TypeError
    except (TypeError, ValueError):
        return False
    if math.isnan(gap) or math.isnan(dropped):
        return False  # unknown (NaN: a frame's missing cell)
    return dropped > 0 and gap * 100 >= threshold_pct

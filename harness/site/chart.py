"""One context's panel of a row page: inline SVG, time across cuDNN releases, a line per torch build
through the median of its rounds, every round a point (its value and run in its title; the script shows it
on hover and opens the run on a click), change points marked between the releases where they began."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from harness.site.markup import seconds, text
from harness.site.steps import Step

COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")
WIDTH, HEIGHT = 760, 300
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 14, 54


@dataclass(frozen=True)
class Dot:
    torch: str
    cudnn: str
    median_s: float
    href: str  # its run's page, from this page
    title: str


def color(index: int) -> str:
    return COLORS[index % len(COLORS)]


def panel(dots: Sequence[Dot], torch: Sequence[str], cudnn: Sequence[str], steps: Sequence[Step]) -> str:
    """The SVG of one panel; ``torch`` and ``cudnn`` in their order (lines, columns)."""
    values = [d.median_s for d in dots]
    if not values:
        return "<p class='muted'>No round of this row ran here.</p>"
    low, high = min(values), max(values)
    log = high / low > 8
    scale = Scale.over(low, high, log)
    step_x = (WIDTH - LEFT - RIGHT) / max(len(cudnn), 1)
    column = {c: i for i, c in enumerate(cudnn)}
    line = {t: i for i, t in enumerate(torch)}

    def x(release: str, build: str) -> float:
        spread = (line[build] - (len(torch) - 1) / 2) * min(6.0, step_x / (2 * max(len(torch), 1)))
        return LEFT + step_x * (column[release] + 0.5) + spread

    parts = [_axes(scale, cudnn, step_x, log)]
    for change in steps:
        if (
            change.axis == "cudnn"
            and change.verdict in ("slower", "faster", "failed")
            and change.cudnn_after in column
        ):
            mid = LEFT + step_x * column[change.cudnn_after]
            parts.append(
                f"<g class='cp {change.verdict}'><line x1='{mid:.1f}' x2='{mid:.1f}' y1='{TOP}' "
                f"y2='{HEIGHT - BOTTOM}' stroke-dasharray='4 3' stroke='currentColor'/>"
                f"<text x='{mid + 3:.1f}' y='{TOP + 10 + 12 * line.get(change.torch_after, 0)}' "
                f"fill='currentColor'>{text(change.verdict)}</text><title>{text(_step_title(change))}</title></g>"
            )
    for build in torch:
        mine = [d for d in dots if d.torch == build]
        medians = [
            (x(c, build), scale(statistics.median(d.median_s for d in mine if d.cudnn == c)))
            for c in cudnn
            if any(d.cudnn == c for d in mine)
        ]
        if len(medians) > 1:
            path = " ".join(f"{a:.1f},{b:.1f}" for a, b in medians)
            parts.append(
                f"<polyline points='{path}' fill='none' stroke='{color(line[build])}' stroke-width='1.5'/>"
            )
    for d in dots:
        parts.append(
            f"<circle class='pt' data-href='{text(d.href)}' cx='{x(d.cudnn, d.torch):.1f}' "
            f"cy='{scale(d.median_s):.1f}' "
            f"r='3.2' fill='{color(line[d.torch])}'><title>{text(d.title)}</title></circle>"
        )
    return (
        f"<svg class='chart' viewBox='0 0 {WIDTH} {HEIGHT}' width='{WIDTH}' height='{HEIGHT}' role='img' "
        f"xmlns='http://www.w3.org/2000/svg'>{''.join(parts)}</svg>"
    )


@dataclass(frozen=True)
class Scale:
    low: float  # the axis' ends, in seconds
    high: float
    log: bool

    @classmethod
    def over(cls, low: float, high: float, log: bool) -> Scale:
        if log:
            return cls(low, high, True)
        pad = (high - low) * 0.08 or high * 0.05
        return cls(max(0.0, low - pad), high + pad, False)

    def __call__(self, value: float) -> float:
        top, bottom = TOP + 4, HEIGHT - BOTTOM - 4
        a, b, v = (
            (math.log(self.low), math.log(self.high), math.log(value))
            if self.log
            else (self.low, self.high, value)
        )
        return bottom - (v - a) / ((b - a) or 1.0) * (bottom - top)


def _axes(scale: Scale, cudnn: Sequence[str], step_x: float, log: bool) -> str:
    low, high = scale.low, scale.high
    ticks = (
        [low * (high / low) ** (i / 4) for i in range(5)]
        if log
        else [low + (high - low) * i / 4 for i in range(5)]
    )
    out = [
        f"<line class='axis' x1='{LEFT}' x2='{LEFT}' y1='{TOP}' y2='{HEIGHT - BOTTOM}'/>"
        f"<line class='axis' x1='{LEFT}' x2='{WIDTH - RIGHT}' y1='{HEIGHT - BOTTOM}' y2='{HEIGHT - BOTTOM}'/>"
    ]
    for tick in ticks:
        y = scale(tick) if tick > 0 or not log else HEIGHT - BOTTOM
        out.append(f"<text x='{LEFT - 4}' y='{y + 4:.1f}' text-anchor='end'>{text(seconds(tick, 4))}</text>")
    for i, release in enumerate(cudnn):
        cx = LEFT + step_x * (i + 0.5)
        out.append(
            f"<text x='{cx:.1f}' y='{HEIGHT - BOTTOM + 16}' text-anchor='middle'>{text(release[:14])}</text>"
        )
    out.append(f"<text x='{LEFT}' y='{HEIGHT - 8}'>cuDNN release →{' (log scale)' if log else ''}</text>")
    return "".join(out)


def _step_title(step: Step) -> str:
    ran = "" if step.ran_before == step.ran_after else f"; ran {step.ran_before} → {step.ran_after}"
    ratio = f"ratio {step.ratio:.3f}, " if step.ratio is not None else ""
    return (
        f"torch {step.torch_after}: cuDNN {step.cudnn_before} → {step.cudnn_after}: {step.verdict} "
        f"({ratio}{step.reason}){ran}"
    )

"""One context's panel of a row page: inline SVG, time across cuDNN releases, a line per torch build
through the median of its rounds, every round a point (its value and run in its title; the script shows it
on hover and opens the run on a click), change points marked between the releases where they began.

The plot takes its box's width: its x positions are percentages of it (a torch build's points set apart by
a few pixels), so text and points keep their size from a phone to a wide screen; the y axis' labels are an
SVG of their own beside it. The y ticks fall on round values (matplotlib's locators). A line joins two
releases only where no release the history holds lies between them; across one it is dashed (its title
names what was not measured); a column that is no release (cuDNN disabled) is points alone. A round a busy
host spoiled is a hollow point, in no line."""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from harness.site.markup import seconds, text
from harness.site.steps import Step

COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")
HEIGHT, LEFT, TOP, BOTTOM = 300, 64, 14, 58
TURNED = 6  # more releases than this: their labels are turned, so they never overlap on a phone
COLUMN_PX = 24  # the least width of a release's column: a wider chart scrolls in its own box


@dataclass(frozen=True)
class Dot:
    torch: str
    cudnn: str
    median_s: float
    href: str  # its run's page, from this page
    title: str
    spoiled: bool = False  # a busy host's round: hollow, and in no line


def color(index: int) -> str:
    return COLORS[index % len(COLORS)]


@dataclass(frozen=True)
class Axes:
    """Where things go: a release's column (a percentage of the width), a torch build's offset in pixels,
    and a time's height."""

    cudnn: tuple[str, ...]
    torch: tuple[str, ...]
    scale: Scale

    def x(self, release: str) -> float:
        return 100 * (self.cudnn.index(release) + 0.5) / len(self.cudnn)

    def dx(self, build: str) -> float:
        return (self.torch.index(build) - (len(self.torch) - 1) / 2) * min(6.0, 24 / len(self.torch))


def panel(
    dots: Sequence[Dot],
    torch: Sequence[str],
    cudnn: Sequence[str],
    steps: Sequence[Step],
    releases: Sequence[str] = (),
) -> str:
    """The chart of one panel; ``torch`` and ``cudnn`` in their order (lines, columns); ``releases``: every
    cuDNN release the history holds, in order (a line across one of them not measured here is dashed)."""
    values = [d.median_s for d in dots]
    if not values:
        return "<p class='muted'>No round of this row ran here.</p>"
    axes = Axes(tuple(cudnn), tuple(torch), Scale.over(min(values), max(values)))
    parts = [_grid(axes)]
    parts += [_change(axes, change) for change in steps if _marked(change, cudnn)]
    for build in torch:
        parts += _line(axes, build, [d for d in dots if d.torch == build and not d.spoiled], releases)
    parts += [_dot(axes, d) for d in dots]
    width = f"min-width:{LEFT + COLUMN_PX * len(cudnn)}px"
    return (
        f"<div class='scroll'><div class='plot' style='{width}'>{_y_axis(axes.scale)}"
        f"<svg class='chart' height='{HEIGHT}' role='img' xmlns='http://www.w3.org/2000/svg'>"
        f"{''.join(parts)}</svg></div></div>"
    )


def gaps(measured: Sequence[str], releases: Sequence[str]) -> list[tuple[str, str, list[str]]]:
    """Each pair of neighbouring ``measured`` releases with the releases of ``releases`` between them that
    were not measured (an empty list: nothing lies between, the line is drawn whole). A column that is
    no release ("disabled", a CPU build's "bundled") is joined to none: it is no step along the releases."""
    order = {r: i for i, r in enumerate(releases)}
    found = []
    for a, b in itertools.pairwise([m for m in measured if m[:1].isdigit()]):
        between = list(releases[order[a] + 1 : order[b]]) if a in order and b in order else []
        found.append((a, b, between))
    return found


def _marked(change: Step, cudnn: Sequence[str]) -> bool:
    return (
        change.axis == "cudnn"
        and change.verdict in ("slower", "faster", "failed")
        and change.cudnn_after in cudnn
    )


def _change(axes: Axes, change: Step) -> str:
    at = 100 * axes.cudnn.index(change.cudnn_after) / len(axes.cudnn)
    y = TOP + 10 + 12 * (axes.torch.index(change.torch_after) if change.torch_after in axes.torch else 0)
    return (
        f"<g class='cp {change.verdict}'><line x1='{at:.2f}%' x2='{at:.2f}%' y1='{TOP}' "
        f"y2='{HEIGHT - BOTTOM}' stroke-dasharray='4 3' stroke='currentColor'/>"
        f"<text x='{at:.2f}%' y='{y}' dx='3' fill='currentColor'>{text(change.verdict)}</text>"
        f"<title>{text(_step_title(change))}</title></g>"
    )


def _line(axes: Axes, build: str, mine: list[Dot], releases: Sequence[str]) -> list[str]:
    """A torch build's line through the median of its quiet rounds at each release: a segment whole
    between neighbouring releases, dashed across releases the history holds that it was not measured at."""
    measured = [c for c in axes.cudnn if any(d.cudnn == c for d in mine)]
    median = {c: axes.scale(statistics.median(d.median_s for d in mine if d.cudnn == c)) for c in measured}
    stroke = f"stroke='{color(axes.torch.index(build))}' stroke-width='1.5'"
    shift = f"transform='translate({axes.dx(build):.1f} 0)'"
    parts = []
    for a, b, between in gaps(measured, releases):
        ends = f"x1='{axes.x(a):.2f}%' y1='{median[a]:.1f}' x2='{axes.x(b):.2f}%' y2='{median[b]:.1f}'"
        if between:
            skipped = ", ".join(between)
            parts.append(
                f"<line class='gap' {ends} {stroke} {shift} stroke-dasharray='5 4'><title>torch "
                f"{text(build)}: no quiet round between cuDNN {text(a)} and {text(b)}, at {text(skipped)}"
                "</title></line>"
            )
        else:
            parts.append(f"<line {ends} {stroke} {shift}/>")
    return parts


def _dot(axes: Axes, d: Dot) -> str:
    paint = color(axes.torch.index(d.torch))
    fill = f"fill='#fff' style='stroke:{paint};stroke-width:1.5px'" if d.spoiled else f"fill='{paint}'"
    return (
        f"<circle class='pt{' spoiled' if d.spoiled else ''}' data-href='{text(d.href)}' "
        f"cx='{axes.x(d.cudnn):.2f}%' cy='{axes.scale(d.median_s):.1f}' r='3.2' {fill} "
        f"transform='translate({axes.dx(d.torch):.1f} 0)'><title>{text(d.title)}</title></circle>"
    )


@dataclass(frozen=True)
class Scale:
    low: float  # the axis' ends, in seconds
    high: float
    log: bool
    ticks: tuple[float, ...]  # round values (1, 2, 2.5 or 5 times a power of ten) within the ends

    @classmethod
    def over(cls, low: float, high: float) -> Scale:
        """An axis over ``low`` to ``high``: log where they are more than 8x apart; its ticks from
        matplotlib's locators, its ends the outer ticks (a linear axis, which spans at least 2 % of its
        values: a round's noise is not drawn as the height of the chart)."""
        from matplotlib import ticker

        if high / low > 8:
            subs = (1.0, 2.0, 5.0) if high / low < 1000 else (1.0,)
            found = ticker.LogLocator(subs=subs).tick_values(low, high)
            ends = (low / 1.15, high * 1.15)
            return cls(*ends, True, tuple(float(t) for t in found if ends[0] <= t <= ends[1]))
        if high - low < high * 0.02:  # one value, or nearly: two percent around it
            low, high = low * 0.99, high * 1.01
        found = ticker.MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10]).tick_values(low, high)
        ticks = tuple(float(t) for t in found)
        return cls(max(0.0, ticks[0]), ticks[-1], False, tuple(t for t in ticks if t >= 0))

    def __call__(self, value: float) -> float:
        top, bottom = TOP + 4, HEIGHT - BOTTOM - 4
        a, b, v = (
            (math.log(self.low), math.log(self.high), math.log(value))
            if self.log
            else (self.low, self.high, value)
        )
        return bottom - (v - a) / ((b - a) or 1.0) * (bottom - top)

    def labels(self) -> list[str]:
        """The ticks as people read them: on a linear axis in one unit, with the decimals its step needs."""
        if self.log or len(self.ticks) < 2:
            return [seconds(t) for t in self.ticks]
        unit, name = next(
            ((u, n) for u, n in ((1e-6, "µs"), (1e-3, "ms")) if max(self.ticks) < u * 1000), (1.0, "s")
        )
        step = (self.ticks[1] - self.ticks[0]) / unit
        decimals = max(0, -math.floor(math.log10(step) + 1e-9))
        if abs(round(step, decimals) - step) > step * 1e-6:  # 2.5, 0.25: one more
            decimals += 1
        return [f"{t / unit:.{decimals}f} {name}" for t in self.ticks]


def _y_axis(scale: Scale) -> str:
    labels = "".join(
        f"<text x='{LEFT - 6}' y='{scale(t) + 4:.1f}' text-anchor='end'>{text(label)}</text>"
        for t, label in zip(scale.ticks, scale.labels(), strict=True)
    )
    title = "log scale" if scale.log else ""
    return (
        f"<svg class='yaxis' width='{LEFT}' height='{HEIGHT}' aria-hidden='true' "
        f"xmlns='http://www.w3.org/2000/svg'>{labels}<text x='4' y='{HEIGHT - 8}'>{title}</text></svg>"
    )


def _grid(axes: Axes) -> str:
    base = HEIGHT - BOTTOM
    out = [
        f"<line class='axis' x1='0.5' x2='0.5' y1='{TOP}' y2='{base}'/>"
        f"<line class='axis' x1='0' x2='100%' y1='{base}' y2='{base}'/>"
    ]
    out += [
        f"<line class='grid' x1='0' x2='100%' y1='{axes.scale(t):.1f}' y2='{axes.scale(t):.1f}'/>"
        for t in axes.scale.ticks
    ]
    turned = len(axes.cudnn) > TURNED
    for release in axes.cudnn:
        label = text(release[:14])
        if turned:  # an SVG placed at the column, so the label turns about its own end
            out.append(
                f"<svg x='{axes.x(release):.2f}%' y='{base + 12}' overflow='visible'>"
                f"<text transform='rotate(-35)' text-anchor='end'>{label}</text></svg>"
            )
        else:
            out.append(
                f"<text x='{axes.x(release):.2f}%' y='{base + 16}' text-anchor='middle'>{label}</text>"
            )
    out.append(f"<text x='4' y='{HEIGHT - 8}'>cuDNN release →</text>")
    return "".join(out)


def _step_title(step: Step) -> str:
    ran = "" if step.ran_before == step.ran_after else f"; ran {step.ran_before} → {step.ran_after}"
    ratio = f"ratio {step.ratio:.3f}, " if step.ratio is not None else ""
    return (
        f"torch {step.torch_after}: cuDNN {step.cudnn_before} → {step.cudnn_after}: {step.verdict} "
        f"({ratio}{step.reason}){ran}"
    )

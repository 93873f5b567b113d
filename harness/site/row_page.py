"""A row's page: a panel per context (GPU, driver, suite), time across cuDNN releases with a line per torch
build, each round a point (hollow where a busy host spoiled it), change points marked, and what ran at each
release."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from harness.history.facts import Context, Row
from harness.history.versions import version_key
from harness.report.analysis.families import family_of
from harness.site import chart, names, parts
from harness.site.data import Point
from harness.site.markup import link, page, seconds, table, text
from harness.site.steps import Step

UP = "../"


@dataclass(frozen=True)
class RowPage:
    row: Row
    contexts: tuple[Context, ...]  # in the site's order
    points: tuple[Point, ...]
    steps: tuple[Step, ...]
    releases: tuple[str, ...] = ()  # every cuDNN release the history holds, in order (``Catalog.cudnn``)


def render(model: RowPage) -> list[str]:
    """The row's page, in parts (each a run of its points) where its rounds would make it larger than a
    site's file may be; where it changed is said on the first."""
    chunks = parts.split(model.points, lambda chunk: len(_body(model, chunk, 2, 2).encode()))
    return [
        page(names.row_title(model.row), _body(model, chunk, k, len(chunks)), UP)
        for k, chunk in enumerate(chunks, 1)
    ]


def _body(model: RowPage, points: Sequence[Point], part: int, count: int) -> str:
    row = model.row
    body = [
        f"<p>Family <b>{text(family_of(row.workload))}</b>, knobs {text(row.knobs)}. "
        f"{len([p for p in model.points if p.status == 'ok' and not p.spoiled])} rounds measured it on a "
        f"quiet host{_spoiled_count(model.points)}. Its data: "
        f"{link(names.row_shard(row), names.row_shard(row).split('/')[-1], UP)}.</p>",
        parts.nav(names.row_page(row), part, count, UP),
    ]
    for context in model.contexts:
        mine = [p for p in points if p.run.context == context]
        if mine:
            found = [s for s in model.steps if s.context == context.label]
            body.append(_panel(context, mine, found, model.releases, part == 1))
    return "".join(body)


def _spoiled_count(points: Sequence[Point]) -> str:
    spoiled = len([p for p in points if p.status == "ok" and p.spoiled])
    return f" ({spoiled} more a busy host spoiled: hollow points, in no line or step)" if spoiled else ""


def _panel(
    context: Context, points: list[Point], steps: list[Step], releases: Sequence[str], changes_said: bool
) -> str:
    torch = sorted({p.run.torch for p in points}, key=version_key)
    cudnn = sorted({p.run.cudnn for p in points}, key=version_key)
    dots = [_dot(p, p.median_s) for p in points if p.status == "ok" and p.median_s is not None]
    spoiled = [d for d in dots if d.spoiled]
    legend = [
        f"<span><i style='background:{chart.color(i)}'></i>torch {text(t)}</span>"
        for i, t in enumerate(torch)
    ]
    if spoiled:
        legend.append("<span><i class='hollow'></i>spoiled: timed on a busy host, in no line or step</span>")
    measured = [c for c in cudnn if any(d.cudnn == c and not d.spoiled for d in dots)]
    if any(between for _, _, between in chart.gaps(measured, releases)):
        legend.append("<span><i class='dashed'></i>releases between not measured here</span>")
    failed = len(points) - len(dots)
    parts = [
        f"<h2 id='{names.context_anchor(context)}'>{text(context.label)}</h2>",
        f"<p class='legend'>{''.join(legend)}</p>",
        chart.panel(dots, torch, cudnn, steps, releases),
        f"<p class='muted'>{len(dots) - len(spoiled)} points; "
        + (f"{len(spoiled)} rounds spoiled by a busy host; " if spoiled else "")
        + f"{failed} rounds failed.</p>",
    ]
    changes = [s for s in steps if s.axis == "cudnn" and s.changed] if changes_said else []
    if changes:
        items = "".join(f"<li>{_change(s)}</li>" for s in changes)
        parts.append(f"<h3>Where it changed</h3><ul>{items}</ul>")
    parts.append("<h3>What ran at each release</h3>" + _what_ran(points, torch, cudnn))
    return "".join(parts)


def _dot(p: Point, median_s: float) -> chart.Dot:
    spoiled = f" · spoiled: busy host ({p.spoiled})" if p.spoiled else ""
    return chart.Dot(
        p.run.torch,
        p.run.cudnn,
        median_s,
        UP + names.run_page(p.run),
        f"{seconds(median_s)} · torch {p.run.torch} · cuDNN {p.run.cudnn} · {p.run.cell_id} round "
        f"{p.run.round} · {p.run.finished_at[:19]}{spoiled}",
        bool(p.spoiled),
    )


def _change(step: Step) -> str:
    ratio = f", ratio {step.ratio:.3f}" if step.ratio is not None else ""
    ran = (
        ""
        if step.ran_before == step.ran_after
        else f"; ran <code>{text(step.ran_before)}</code> → <code>{text(step.ran_after)}</code>"
    )
    release = link(names.release_page(step.torch_after, step.cudnn_after), f"cuDNN {step.cudnn_after}", UP)
    open_ = " (open)" if step.open else ""
    return (
        f"<span class='{text(step.verdict)}'>{text(step.verdict)}{open_}</span> at {release} (from "
        f"{text(step.cudnn_before)}, torch {text(step.torch_after)}{ratio}){ran}"
    )


def _what_ran(points: Sequence[Point], torch: list[str], cudnn: list[str]) -> str:
    rows = []
    for build in torch:
        cells = [text(f"torch {build}")]
        for release in cudnn:
            mine = [p for p in points if p.run.torch == build and p.run.cudnn == release]
            ran = Counter(p.ran or p.status for p in mine).most_common()
            spoiled = len([p for p in mine if p.spoiled])
            cells.append(
                "<br/>".join(f"<code>{text(name)}</code> ×{n}" for name, n in ran)
                + (f"<br/><span class='spoiled'>{spoiled} spoiled (busy host)</span>" if spoiled else "")
            )
        rows.append(cells)
    return table(["", *(f"cuDNN {c}" for c in cudnn)], rows, named=True)

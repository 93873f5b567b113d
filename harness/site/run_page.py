"""A run's page: the run (its cell, round, build and context) and its report: every row it measured, each
linked to the row's page."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.site import names, parts
from harness.site.data import RunMeasurement, StoredRun
from harness.site.markup import link, page, seconds, table, text

UP = "../"


@dataclass(frozen=True)
class RunPage:
    run: StoredRun
    measurements: tuple[RunMeasurement, ...]


def render(model: RunPage) -> list[str]:
    """The run's page, in parts where its rows would make it larger than a site's file may be."""
    run = model.run
    facts = [
        ["cell", text(f"{run.cell_id} ({run.cell_label})")],
        ["round", str(run.round)],
        ["status", text(run.status + (f": {run.failure}" if run.failure else ""))],
        ["torch", text(run.torch)],
        ["cuDNN", link(names.release_page(run.torch, run.cudnn), run.cudnn, UP)],
        ["context", text(run.context.label)],
        ["backend", text(run.backend)],
        ["started", text(run.started_at)],
        ["finished", text(run.finished_at)],
        ["document", f"<code>{text(run.sha256)}</code> (its SHA-256 in the history)"],
    ]
    rows = [
        [
            link(names.row_page(m.row), names.row_title(m.row), UP),
            text(m.status)
            + (f" <span class='spoiled'>spoiled: {text(m.spoiled)}</span>" if m.spoiled else ""),
            f"<span class='num'>{text(seconds(m.median_s))}</span>",
            text(f"{seconds(m.q1_s)} – {seconds(m.q3_s)}" if m.q1_s is not None else ""),
            f"<code>{text(m.ran or '')}</code>",
        ]
        for m in model.measurements
    ]
    base = names.run_page(run)

    def part(chunk: Sequence[list[str]], k: int, count: int) -> str:
        body = (
            (table(["", ""], facts, named=True) if k == 1 else "")
            + f"<h2>Rows ({len(rows)})</h2>"
            + parts.nav(base, k, count, UP)
            + "<input class='filter' hidden='hidden' placeholder='filter rows' data-table='rows'/>"
            + table(["row", "status", "median", "quartiles", "ran"], list(chunk), " id='rows'")
        )
        return page(f"Run {run.cell_id} round {run.round}", body, UP)

    return parts.table_pages(rows, part)

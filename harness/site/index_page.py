"""The site's index: the contexts, a grid of torch builds × cuDNN releases (the runs of each) per context,
the newest runs, the open regressions, and every row (filtered and searched with the script)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from harness.history.facts import Context, Row
from harness.history.versions import version_key
from harness.report.analysis.families import family_of
from harness.site import names, parts
from harness.site.data import StoredRun
from harness.site.markup import link, page, ratio, table, text
from harness.site.steps import Step

NEWEST = 30
REGRESSIONS = 200  # listed on the index (as many as the feed holds); index.json has every one


@dataclass(frozen=True)
class IndexPage:
    contexts: tuple[Context, ...]
    runs: tuple[StoredRun, ...]
    rows: tuple[tuple[Row, int], ...]  # each row and how many rounds measured it
    regressions: tuple[tuple[Row, Step], ...]  # open, newest first


def render(model: IndexPage) -> list[str]:
    """The index, in parts where its table of rows would make it larger than a site's file may be."""
    body = [
        f"<p>{len(model.runs)} runs, {len(model.rows)} rows, {len(model.contexts)} contexts. Runs compare "
        "only within a context (GPU, driver, suite version and profile).</p>",
        "<h2>Contexts</h2>",
    ]
    for context in model.contexts:
        body.append(_grid(context, [r for r in model.runs if r.context == context]))
    body.append(f"<h2>Open regressions ({len(model.regressions)})</h2>")
    body.append(_regressions(model.regressions[:REGRESSIONS]))
    if len(model.regressions) > REGRESSIONS:
        body.append(
            f"<p>The newest {REGRESSIONS} are listed; index.json and the rows' pages hold all "
            f"{len(model.regressions)}.</p>"
        )
    newest = sorted(model.runs, key=lambda r: (r.finished_at, r.id), reverse=True)[:NEWEST]
    body.append("<h2>Newest runs</h2>")
    body.append(
        table(
            ["finished", "run", "torch", "cuDNN", "GPU", "status"],
            [
                [
                    text(r.finished_at[:19]),
                    link(names.run_page(r), f"{r.cell_id} round {r.round}", ""),
                    text(r.torch),
                    link(names.release_page(r.torch, r.cudnn), r.cudnn, ""),
                    text(r.context.gpu),
                    text(r.status),
                ]
                for r in newest
            ],
        )
    )
    rows = [
        [
            link(names.row_page(row), row.workload, ""),
            text(names.mode(row)),
            text(row.knobs),
            text(family_of(row.workload)),
            str(n),
        ]
        for row, n in model.rows
    ]

    def part(chunk: Sequence[list[str]], k: int, count: int) -> str:
        rows_table = (
            "<h2>Rows</h2>"
            + parts.nav("index.html", k, count, "")
            + "<input class='filter' hidden='hidden' placeholder='filter rows: workload, mode, family' "
            "data-table='rows'/>"
            + table(["row", "mode", "knobs", "family", "rounds"], list(chunk), " id='rows'")
        )
        return page("Qualification history", ("".join(body) if k == 1 else "") + rows_table, "")

    return parts.table_pages(rows, part)


def _grid(context: Context, runs: list[StoredRun]) -> str:
    torch = sorted({r.torch for r in runs}, key=version_key)
    cudnn = sorted({r.cudnn for r in runs}, key=version_key)
    count = Counter((r.torch, r.cudnn) for r in runs)
    rows = [
        [text(f"torch {t}")]
        + [
            link(names.release_page(t, c), f"{count[(t, c)]} run{'s' * (count[(t, c)] != 1)}", "")
            if count[(t, c)]
            else ""
            for c in cudnn
        ]
        for t in torch
    ]
    return f"<h3 id='{names.context_anchor(context)}'>{text(context.label)}</h3>" + table(
        ["", *(f"cuDNN {c}" for c in cudnn)], rows, named=True
    )


def _regressions(found: tuple[tuple[Row, Step], ...]) -> str:
    if not found:
        return "<p>None.</p>"
    return table(
        ["row", "context", "torch", "began at", "ratio"],
        [
            [
                link(names.row_page(row), names.row_title(row), ""),
                text(step.context),
                text(step.torch_after),
                link(
                    names.release_page(step.torch_after, step.cudnn_after),
                    f"cuDNN {step.cudnn_before} → {step.cudnn_after}",
                    "",
                ),
                ratio(step.ratio),
            ]
            for row, step in found
        ],
    )

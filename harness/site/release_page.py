"""A release's page (cuDNN X with torch Y): what changed when moving to it, context by context: the
direction counts, every row that changed there grouped by family (model rows first), what ran before and
after, and the runs at it."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from harness.history.facts import Context, Row
from harness.report.analysis.families import MODEL, family_of
from harness.site import names
from harness.site.data import StoredRun
from harness.site.markup import link, page, ratio, table, text
from harness.site.steps import Step

UP = "../"
ORDER = ("slower", "faster", "failed", "same", "inconclusive")
RUNS = 500  # runs listed per context: a page stays small however many rounds ran at one release


@dataclass(frozen=True)
class ContextPart:
    context: Context
    steps: tuple[tuple[Row, Step], ...]  # into this release, one per row
    runs: tuple[StoredRun, ...]


@dataclass(frozen=True)
class ReleasePage:
    torch: str
    cudnn: str
    parts: tuple[ContextPart, ...]


def render(model: ReleasePage) -> str:
    body = []
    for part in model.parts:
        body.append(f"<h2 id='{names.context_anchor(part.context)}'>{text(part.context.label)}</h2>")
        body.append(_part(part))
    title = f"cuDNN {model.cudnn} with torch {model.torch}"
    return page(title, "".join(body) or "<p>No run here.</p>", UP)


def _part(part: ContextPart) -> str:
    out = []
    first = part.steps[0][1] if part.steps else None
    if first is None:
        out.append("<p>The first release measured in this context: nothing to compare with.</p>")
    elif first.axis == "cudnn":
        out.append(f"<p>Moving from cuDNN {text(first.cudnn_before)} (torch {text(first.torch_before)}).</p>")
    else:
        out.append(
            f"<p>The first cuDNN release measured with this torch build; compared with torch "
            f"{text(first.torch_before)} at the same cuDNN.</p>"
        )
    counts = Counter(s.verdict for _, s in part.steps)
    if part.steps:
        out.append(
            "<p class='counts'>"
            + ", ".join(f"<span class='{v}'>{counts[v]} {v}</span>" for v in ORDER if counts[v])
            + f" of {len(part.steps)} rows.</p>"
        )
    changed = [(r, s) for r, s in part.steps if s.changed]
    by_family: dict[str, list[tuple[Row, Step]]] = {}
    for row, step in changed:
        by_family.setdefault(family_of(row.workload), []).append((row, step))
    for family in sorted(by_family, key=lambda f: (not f.startswith(MODEL), f)):
        out.append(f"<h3>{text(family)}</h3>" + _changes(by_family[family]))
    if part.steps and not changed:
        out.append("<p>No row changed here.</p>")
    newest = sorted(part.runs, key=lambda r: (r.finished_at, r.id), reverse=True)[:RUNS]
    runs = [
        [
            link(names.run_page(r), f"{r.cell_id} round {r.round}", UP),
            text(r.status),
            text(r.finished_at[:19]),
        ]
        for r in newest
    ]
    more = (
        f" (the newest {RUNS} of {len(part.runs)}; each row's page links every one)"
        if len(part.runs) > RUNS
        else ""
    )
    out.append(f"<h3>Runs at this release{more}</h3>" + table(["run", "status", "finished"], runs))
    return "".join(out)


def _changes(rows: list[tuple[Row, Step]]) -> str:
    lines = [
        [
            link(names.row_page(row), names.row_title(row), UP),
            f"<span class='{text(s.verdict)}'>{text(s.verdict)}</span>",
            ratio(s.ratio),
            f"<code>{text(s.ran_before or '')}</code>",
            f"<code>{text(s.ran_after or '')}</code>",
            text(s.reason),
        ]
        for row, s in sorted(rows, key=lambda rs: ORDER.index(rs[1].verdict) if rs[1].verdict in ORDER else 9)
    ]
    return table(["row", "verdict", "ratio", "ran before", "ran after", "why"], lines)

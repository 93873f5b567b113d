"""Per torch build: which cuDNN source to pair with each torch build, every source judged against that
build's own cell with the baseline's source, a line per source: its model rows, then its rows counted."""

from __future__ import annotations

from harness.report.analysis.model import Analysis, View
from harness.report.analysis.per_torch import PerTorch, Row, SourceLine
from harness.report.sections.context import SectionContext
from harness.report.writers import markdown
from harness.report.writers.document import Section, TableCell

HEADERS = (
    "torch",
    "cuDNN",
    "judged against",
    "model rows",
    "rows",
    "faster",
    "slower",
    "same",
    "undecided",
    "failed",
)
FAMILY_HEADERS = ("torch", "cuDNN", "families with a row faster, slower or failed")


def per_torch(ctx: SectionContext) -> list[Section]:
    return list(_per_torch(ctx.view, ctx.analysis))


def _per_torch(view: View, analysis: Analysis) -> tuple[Section, ...]:
    """A line per (torch build, cuDNN source), then the families that changed in each, a table of their
    own (a line of both would be cut to fit); none where the plan has one build or one source."""
    found = analysis.per_torch
    if found is None or not found.lines:
        return ()
    several = len({row.knobs for line in found.lines for row in line.rows}) > 1
    rows = tuple(_row(view, line, several) for line in found.lines)
    families = tuple(
        (line.torch, line.cudnn, _families(line, several))
        for line in found.lines
        if line.baseline and line.rows
    )
    return (
        Section("Per torch build", " ".join(_intro(view, found)), HEADERS, rows),
        Section("Families that changed, per torch build", "", FAMILY_HEADERS, families, level=3),
    )


def _intro(view: View, found: PerTorch) -> list[str]:
    source = markdown.inline(found.source, 100)
    said = [
        f"Each torch build's cuDNN sources, each against **that build's own cell with cuDNN {source}** "
        "(its local baseline; 'judged against' names it, with its letter in Groups (cells)), never against "
        "another build's: a torch change never mixes into a source's verdicts. Rows are judged as the "
        "scorecard judges them (the same thresholds, alpha and verdicts). Model rows (a whole training "
        "step) come first, each with its verdict and time ratio (above 1 is slower); then how many of the "
        "source's rows came out faster, slower, same or undecided (failed: failed or missing); the table "
        "after it names the families with a row faster, slower or failed. A source's counts, never one "
        "row's change, describe the source."
    ]
    if found.unjudged:
        builds = ", ".join(markdown.inline(torch, 100) for torch in found.unjudged)
        has = "has" if len(found.unjudged) == 1 else "have"
        said.append(
            f"**Not judged:** torch {builds} {has} no cell with cuDNN {source} that measured anything, so no "
            "local baseline judges its sources here; add that cell to the matrix, or run it again where it "
            "failed, to judge them."
        )
    if found.left_out:
        said.append(
            f"{len(found.left_out)} cells of another base image or python than the baseline's are left out "
            "(their verdicts are in the verdict table, against the baseline)."
        )
    return said


def _row(view: View, line: SourceLine, knobs_shown: bool) -> tuple[TableCell, ...]:
    if line.baseline is None:
        return (
            line.torch,
            line.cudnn,
            "nothing: no measured cell of the baseline's cuDNN source",
            *[None] * 7,
        )
    against = f"{view.letters.get(line.baseline, '?')}: {view.labels.get(line.baseline, line.baseline)}"
    if not line.rows:
        return (line.torch, line.cudnn, against, "no row compared: its runs measured nothing", *[None] * 6)
    counts = line.counts
    return (
        line.torch,
        line.cudnn,
        against,
        "; ".join(_model(row, knobs_shown) for row in line.models) or "none",
        len(line.rows),
        counts["faster"],
        counts["slower"],
        counts["same"],
        counts["inconclusive"],
        counts["failed"] + counts["missing"],
    )


def _families(line: SourceLine, knobs_shown: bool) -> str:
    changed = [
        f"{f.family} {f.mode}"
        + (f" [{f.knobs}]" if knobs_shown and f.knobs else "")
        + f": {f.faster} faster, {f.slower} slower"
        + (f", {f.failed} failed" if f.failed else "")
        + f" of {f.rows}"
        for f in line.families
        if not f.is_model and (f.faster or f.slower or f.failed)
    ]
    return "; ".join(changed) or "none"


def _model(row: Row, knobs_shown: bool) -> str:
    """``train_resnet50 fp32 (TF32 off): same 1.014``: one row's verdict, never a finding about a source."""
    knobs = f" [{row.knobs}]" if knobs_shown and row.knobs else ""
    ratio = f" {row.ratio:.3f}" if row.ratio is not None else ""
    return f"{row.workload} {row.mode}{knobs}: {row.verdict}{ratio}"

"""The first screen's summary by family: what each release (or each candidate) changed, per family of rows
and per model, never one row's change read as the release's."""

from __future__ import annotations

from harness.report.analysis.families import FamilyLine
from harness.report.analysis.model import Analysis, View
from harness.report.sections.context import SectionContext, listed
from harness.report.writers import markdown
from harness.report.writers.document import Section, TableCell, Value

HEADERS = (
    "compared",
    "against",
    "family",
    "mode",
    "rows",
    "faster",
    "slower",
    "same",
    "undecided",
    "failed",
    "geomean",
    "largest faster",
    "largest slower",
    "other kernels",
)


def _summed(analysis: Analysis) -> tuple[tuple[FamilyLine, ...], bool]:
    """Along a release axis, each release against the one before it (True); else each candidate against
    the baseline."""
    if analysis.series is not None and analysis.series.families:
        return analysis.series.families, True
    return analysis.families, False


def sentences(analysis: Analysis, most: int = 40) -> list[str]:
    """The summary as sentences, one a model row or a family that changed: ``9.28.0.42 against 9.19.1.2:
    conv forward NCHW fp32 (TF32 off): 3 of 37 rows faster (largest ...), 19 slower (...), other kernels
    in 34``."""
    lines, _ = _summed(analysis)
    said = [
        f"{line.compared} against {line.against}: {line.words()}"
        for line in lines
        if line.is_model or line.changed
    ]
    return said[:most] + ([f"... and {len(said) - most} more in report.md"] if len(said) > most else [])


def by_family(ctx: SectionContext) -> list[Section]:
    return listed(_by_family(ctx.view, ctx.analysis))


def _by_family(view: View, analysis: Analysis) -> Section | None:
    """Model rows always, families only where something changed (a verdict or what ran)."""
    lines, along = _summed(analysis)
    if not lines:
        return None
    shown = [line for line in lines if line.is_model or line.changed]
    both = [line for line in lines if line.both_ways]
    what = "each release against the release before it" if along else "each candidate against the baseline"
    several = len({line.knobs for line in lines}) > 1
    whose = "a release's" if along else "a candidate's"
    intro = [
        f"By family, {what}: how many of a family's rows (a network's layers at one pass, layout and mode) "
        "came out faster, slower, same or undecided (failed: failed or missing), the largest change each "
        f"way, and in how many other kernels ran. A family's count, never one row's change, describes "
        f"{whose} change. Model rows (a whole training step) come first, each alone. Families with no row "
        "faster, slower or failed and no other kernels are left out (their rows are same or undecided: the "
        "verdict table lists each)."
    ]
    if both:
        listed = "; ".join(
            markdown.inline(
                f"{line.compared}: {line.family} {line.mode}"
                + (f" [{line.knobs}]" if several and line.knobs else "")
                + f" ({line.faster} faster, {line.slower} slower of {line.rows})"
            )
            for line in both[:12]
        )
        more = f" and {len(both) - 12} more" if len(both) > 12 else ""
        intro.append(
            f"**Rows of one family moved both ways** (no one direction holds for it): {listed}{more}."
        )
    elif shown:
        intro.append("No family's rows moved both ways.")
    if not shown:
        intro.append("No family changed.")
    rows = tuple(_row(line, several) for line in shown)
    return Section("By family", " ".join(intro), HEADERS if rows else (), rows)


def _row(line: FamilyLine, knobs_shown: bool) -> tuple[TableCell, ...]:
    extremes: list[TableCell] = [
        Value(extreme.text(), extreme.ratio, "number") if extreme else ""
        for extreme in (line.fastest, line.slowest)
    ]
    return (
        line.compared,
        line.against,
        line.family,
        line.mode + (f" [{line.knobs}]" if line.knobs and knobs_shown else ""),
        line.rows,
        line.faster,
        line.slower,
        line.same,
        line.undecided,
        line.failed,
        Value(f"{line.geomean:.3f}", line.geomean, "number") if line.geomean else "",
        *extremes,
        line.ran_changed,
    )

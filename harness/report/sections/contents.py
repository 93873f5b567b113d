"""The report's sections, in the order a reader meets them, built once as data for every writer."""

from __future__ import annotations

from harness.report.sections import (
    answer,
    family_sections,
    next_steps,
    numerics_sections,
    per_torch_sections,
    run_sections,
    series_sections,
    verdict_sections,
    within_group_sections,
)
from harness.report.sections.context import SectionBuilder, SectionContext
from harness.report.writers import markdown
from harness.report.writers.document import Document, Section


def heatmap(ctx: SectionContext) -> list[Section]:
    """The HTML page's plot of every row (Markdown has no figure)."""
    return [Section("Time ratio heatmap", figure="heatmap")]


# The report's table of contents: each builder in the order a reader meets its sections
CONTENTS: tuple[SectionBuilder, ...] = (
    answer.scorecard_section,
    family_sections.by_family,
    per_torch_sections.per_torch,  # each build's sources against its own baseline
    heatmap,
    series_sections.across_releases,
    answer.read_first,
    next_steps.what_to_do,
    run_sections.method,
    verdict_sections.what_changed,
    run_sections.groups,
    run_sections.problems,
    verdict_sections.verdicts,
    within_group_sections.autotuning,
    numerics_sections.numerics,
    numerics_sections.beyond_tolerance,
    within_group_sections.scaling,
    run_sections.environment,
)


def document(ctx: SectionContext) -> Document:
    """The whole report for ``ctx.out_dir`` (links are relative to it); the sections fill ``ctx.extracts``."""
    view, analysis = ctx.view, ctx.analysis
    sections = tuple(section for build in CONTENTS for section in build(ctx))
    title = f"{view.name}: {len(view.groups)} groups against {view.labels.get(view.baseline, view.baseline)}"
    environment = markdown.inline(answer.environment_line(view, analysis), markdown.MAX_LINE)
    header = environment + "\n\n" + answer.outcome_line(analysis)
    return Document(title, header, sections, ctx.extracts)

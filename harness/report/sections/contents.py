"""The report's sections, in the order a reader meets them, built once as data for every writer."""

from __future__ import annotations

from pathlib import Path

from harness.report.analysis.model import Analysis, View
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
from harness.report.writers import markdown
from harness.report.writers.document import Document, Section
from harness.results.documents import LoadedResults


def document(
    view: View, analysis: Analysis, loaded: LoadedResults, out_dir: Path, sources: list[Path]
) -> Document:
    """The whole report for ``out_dir`` (links are relative to it)."""
    letters = view.letters
    extracts: dict[str, tuple[str, int]] = {}
    sections = [
        answer.scorecard(view, analysis),
        family_sections.by_family(view, analysis),
        *per_torch_sections.per_torch(view, analysis),  # each build's sources against its own baseline
        Section("Time ratio heatmap", figure="heatmap"),  # the HTML page's plot of every row
        *series_sections.across_releases(view, analysis),
        answer.read_first(view, analysis),
        next_steps.section(view, analysis, sources, view.matrix),
        run_sections.method(view, analysis, loaded, sources),
        verdict_sections.what_changed(analysis, letters),
        run_sections.cells(view, analysis, out_dir, letters),
        *run_sections.problems(analysis, loaded),
        *verdict_sections.verdicts(view, analysis, out_dir, letters, extracts),
        within_group_sections.autotuning(analysis, letters),
        *numerics_sections.numerics(view, analysis, letters),
        numerics_sections.beyond_tolerance(analysis, letters),
        within_group_sections.scaling(view, analysis, out_dir, letters),
        run_sections.environment(view, analysis, letters),
    ]
    title = f"{view.name}: {len(view.groups)} groups against {view.labels.get(view.baseline, view.baseline)}"
    environment = markdown.inline(answer.environment_line(view, analysis), markdown.MAX_LINE)
    header = environment + "\n\n" + answer.outcome_line(analysis)
    return Document(title, header, tuple(s for s in sections if s is not None), extracts)

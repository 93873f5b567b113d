"""What every section of a report is built from, and the one shape of a section builder."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harness.report.analysis.model import Analysis, View
from harness.report.writers.document import Section
from harness.results.documents import LoadedResults


@dataclass(frozen=True)
class SectionContext:
    """One report's inputs, as every section builder reads them: what is compared (``view``), what the
    analysis found (``analysis``), the results it was made of (``loaded``, from ``sources``), and the
    folder the report is written to (``out_dir``: links are relative to it). ``extracts`` collects, as the
    sections link a number to its measurement, link target -> (result file, measurement index): ``render``
    writes each as its own small file."""

    view: View
    analysis: Analysis
    loaded: LoadedResults
    out_dir: Path
    sources: tuple[Path, ...]
    extracts: dict[str, tuple[str, int]] = field(default_factory=dict)

    @property
    def letters(self) -> dict[str, str]:
        """The short name of each group in tables and plots (``View.letters``)."""
        return self.view.letters


SectionBuilder = Callable[[SectionContext], list[Section]]
"""A report section builder: the context in, the sections it makes out (none where it has nothing)."""


def listed(section: Section | None) -> list[Section]:
    """A section that may be absent, as a builder returns it."""
    return [] if section is None else [section]

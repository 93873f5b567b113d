"""Write a report's files: report.md, report.html, results.csv, verdicts.csv, verdict.json, and for CI
systems summary.md and junit.xml; every text file through ``jsonio.write_text_atomic`` (UTF-8 whatever the
text holds) and every CSV through ``csvsafe``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd

from harness import csvsafe, jsonio, schemas
from harness.report import digest
from harness.report.analysis import families
from harness.report.analysis.model import Analysis, View
from harness.report.sections import contents, table_values
from harness.report.sections.context import SectionContext
from harness.report.writers import html, markdown, plots, verdict_json
from harness.report.writers.document import Rendered
from harness.results import folder as results_folder
from harness.results.documents import LoadedResults


def render(
    view: View, analysis: Analysis, loaded: LoadedResults, out_dir: Path, sources: list[Path]
) -> Rendered:
    """Write report.md, report.html, results.csv, verdicts.csv and verdict.json into ``out_dir`` (and
    series.csv, changes.csv, families.csv and per_torch.csv where the analysis has them)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    document = contents.document(SectionContext(view, analysis, loaded, out_dir, tuple(sources)))
    _write_extracts(out_dir, document.extracts, loaded)
    markdown_file = out_dir / "report.md"
    jsonio.write_text_atomic(markdown_file, markdown.page(document))
    html_file = out_dir / "report.html"
    jsonio.write_text_atomic(html_file, html.page(document, plots.plots(view, analysis)))
    csv = out_dir / "results.csv"
    jsonio.write_text_atomic(csv, csvsafe.to_csv(analysis.frame))
    jsonio.write_text_atomic(out_dir / "verdicts.csv", verdicts_csv(analysis.timing))
    if analysis.series is not None:  # the release axis: ratios per release, and where each change began
        jsonio.write_text_atomic(out_dir / "series.csv", csvsafe.to_csv(analysis.series.ratios))
        jsonio.write_text_atomic(out_dir / "changes.csv", analysis.series.changes_csv())
    summed = [*analysis.families, *(analysis.series.families if analysis.series is not None else ())]
    if summed:  # by family: each candidate against the baseline, each release against the one before
        jsonio.write_text_atomic(out_dir / "families.csv", families.to_csv(summed))
    if analysis.per_torch is not None:  # each torch build's cuDNN sources against its own baseline source
        jsonio.write_text_atomic(out_dir / "per_torch.csv", analysis.per_torch.to_csv())
    jsonio.write_text_atomic(out_dir / "summary.md", digest.summary(view, analysis, sources))
    jsonio.write_text_atomic(out_dir / "junit.xml", digest.junit(view, analysis))
    verdict = verdict_json.document(view, analysis)
    problems = schemas.problems("verdict", verdict, "verdict.json")
    if problems:  # our own output must hold to our own schema; a bug here must not pass silently
        raise ValueError(
            "verdict.json does not match schemas/verdict.schema.json: " + "; ".join(map(str, problems[:3]))
        )
    verdict_file = out_dir / "verdict.json"
    jsonio.write_atomic(verdict_file, verdict)
    return Rendered(markdown_file, html_file, csv, verdict_file)


def _write_extracts(out_dir: Path, extracts: dict[str, tuple[str, int]], loaded: LoadedResults) -> None:
    """Each linked measurement as its own small file: the measurement as recorded, its raw samples left
    out (they are in the result file it names), with the cell and run it belongs to."""
    # a planted link is refused, not followed
    folder = jsonio.real_folder(out_dir / table_values.MEASUREMENTS)
    for stale in folder.glob(f"*{results_folder.MEASUREMENT_SUFFIX}"):  # an earlier render's links
        stale.unlink()
    documents_by_file = dict(zip(loaded.files, loaded.documents, strict=True))
    for href, (file, index) in extracts.items():
        doc = documents_by_file[file]
        measurement = {
            k: v for k, v in doc["measurements"][index].items() if k not in ("samples_s", "sm_clock_mhz")
        }
        extract = {
            "result_file": os.path.relpath(file, (out_dir / href).parent),
            "measurement_index": index,
            "cell": doc["cell"],
            "round": doc["run"].get("round", 1),
            "measurement": measurement,
        }
        jsonio.write_atomic(out_dir / href, extract)


def verdicts_csv(timing: pd.DataFrame) -> str:
    """The verdict rows as CSV; a list (the files of a side) as a JSON array, not a Python repr."""
    table = timing.copy()
    for column in ("baseline_files", "candidate_files"):
        if column in table:
            table[column] = [json.dumps(list(files)) for files in table[column]]
    return csvsafe.to_csv(table)

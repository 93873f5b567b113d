"""Analyze loaded results against the baseline: the long-form frame, the verdicts, the gate."""

from __future__ import annotations

import pandas as pd

from harness.report.analysis import (
    autotuning,
    families,
    frames,
    numerics_verdicts,
    per_torch,
    release_gate,
    row_verdicts,
    series,
)
from harness.report.analysis.model import Analysis, View
from harness.results.documents import LoadedResults, round_of
from harness.suite.document import ResultDocument


def analyze(
    view: View,
    loaded: LoadedResults,
    policy: release_gate.Policy,
    group_of_file: dict[str, str] | None = None,
) -> Analysis:
    frame = frames.long_form(loaded)
    if group_of_file is not None and not frame.empty:
        frame["group"] = frame["file"].map(group_of_file)
    docs: dict[str, list[tuple[ResultDocument, str]]] = {g: [] for g in view.groups}
    outside = []
    for doc, file in zip(loaded.documents, loaded.files, strict=True):
        group = group_of_file[file] if group_of_file is not None else doc["cell"]["id"]
        if group in docs:
            docs[group].append((doc, file))
        else:  # a cell the plan does not list (an edited matrix, a stray file): said, never compared
            outside.append((file, group))
    if outside and not frame.empty:
        frame = frame[~frame["file"].isin({file for file, _ in outside})]
    samples = frames.samples(loaded)
    timing = row_verdicts.timing(frame, view.baseline, view.groups, view.threshold_pct, view.alpha, samples)
    numerics = (
        numerics_verdicts.numerics(frame, view.baseline, view.groups) if not frame.empty else pd.DataFrame()
    )
    beyond = numerics_verdicts.beyond_tolerance(frame, view.groups)
    tuned = autotuning.compare(frame, view.groups, view.threshold_pct, view.alpha, samples)
    failed_runs = [
        f"{group} round {round_of(doc)} ({file}): {_failure(doc)}"
        for group, entries in docs.items()
        for doc, file in entries
        if doc["status"] != "ok"
    ]
    failed_runs += [f"{group}: no result file" for group in view.groups if not docs.get(group)]
    gate = release_gate.gate(timing, numerics, failed_runs, policy, beyond)
    along = series.build(
        view.cells,
        _bundled_versions(docs),
        frame,
        timing,
        view.baseline,
        view.threshold_pct,
        view.alpha,
        samples,
    )
    summed = [
        line
        for group in view.groups
        if group != view.baseline and not timing.empty
        for line in families.summarize(
            timing[timing["group"] == group],
            view.labels.get(group, group),
            view.labels.get(view.baseline, view.baseline),
        )
    ]
    by_torch = per_torch.build(
        view.cells, view.baseline, frame, timing, view.threshold_pct, view.alpha, samples
    )
    return Analysis(
        frame,
        timing,
        numerics,
        beyond,
        tuned,
        gate,
        docs,
        samples,
        tuple(outside),
        along,
        tuple(summed),
        by_torch,
    )


def _bundled_versions(docs: dict[str, list[tuple[ResultDocument, str]]]) -> dict[str, str]:
    """The cuDNN each group's runs reported loading, where they agree (a bundled cell's release)."""
    found = {}
    for group, entries in docs.items():
        versions = {d["cudnn"]["runtime_version"] for d, _ in entries if d.get("cudnn")} - {None}
        if len(versions) == 1:
            found[group] = str(versions.pop())
    return found


def _failure(doc: ResultDocument) -> str:
    failure = doc["failure"]
    return f"{failure['stage']}: {failure['reason']}" if failure else "failed"

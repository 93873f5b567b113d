"""Analyze merged results against the baseline and render them: Markdown, one HTML page, CSV, verdict.json.

Every number in a table links to the result file it came from, so anyone can re-render and check
it (``python -m harness report``). Sections are built once as data (``Section``) and written by
both renderers, so the Markdown and the HTML never disagree.
"""

from __future__ import annotations

import datetime as dt
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from tabulate import tabulate

from harness import compare, jsonio, results, schemas, verdicts
from harness.compare import KEYS
from harness.matrix import Plan
from harness.results import LoadedResults

VERDICT_ORDER = {"slower": 0, "failed": 1, "inconclusive": 2, "missing": 3, "faster": 4, "same": 5}
MARK = {"slower": "▼ slower", "faster": "▲ faster", "same": "= same", "inconclusive": "? inconclusive",
        "failed": "✗ failed", "missing": "– missing"}  # fmt: skip


@dataclass(frozen=True)
class View:
    """What is compared with what: groups (cells, or the sides of an ad-hoc compare) and the thresholds."""

    name: str
    baseline: str
    groups: tuple[str, ...]
    labels: dict[str, str]
    default_pct: float
    alpha: float
    rounds: int  # asked for per group; 0 where unknown (ad-hoc compare)
    note: str
    per_workload_pct: dict[str, float] = field(default_factory=dict)

    def threshold_pct(self, workload: str) -> float:
        return self.per_workload_pct.get(workload, self.default_pct)

    @classmethod
    def from_plan(cls, plan: Plan) -> View:
        return cls(
            name=plan.name,
            baseline=plan.baseline_id,
            groups=tuple(c.id for c in plan.cells),
            labels={c.id: compare.cell_label(c.to_json()) for c in plan.cells},
            default_pct=plan.regression_pct,
            alpha=plan.alpha,
            rounds=plan.rounds,
            note=f"matrix `{plan.source}` (sha256 `{plan.matrix_sha256[:12]}`), suite profile `{plan.suite['profile']}`",
            per_workload_pct=plan.per_workload_pct,
        )


@dataclass(frozen=True)
class Analysis:
    frame: pd.DataFrame
    timing: pd.DataFrame
    numerics: pd.DataFrame
    gate: verdicts.Gate
    docs: dict[str, list[tuple[dict[str, Any], str]]]  # group -> (document, file) per round
    samples: dict[tuple[str, str, str, str], list[float]]
    outside: tuple[tuple[str, str], ...] = ()  # (file, cell id) of valid results of no group: not compared


def analyze(
    view: View, loaded: LoadedResults, group_of_file: dict[str, str] | None = None, strict: bool = False
) -> Analysis:
    frame = compare.long_form(loaded)
    if group_of_file is not None and not frame.empty:
        frame["group"] = frame["file"].map(group_of_file)
    docs: dict[str, list[tuple[dict[str, Any], str]]] = {g: [] for g in view.groups}
    outside = []
    for doc, file in zip(loaded.documents, loaded.files, strict=True):
        group = group_of_file[file] if group_of_file is not None else doc["cell"]["id"]
        if group in docs:
            docs[group].append((doc, file))
        else:  # a cell the plan does not list (an edited matrix, a stray file): said, never compared
            outside.append((file, group))
    if outside and not frame.empty:
        frame = frame[~frame["file"].isin({file for file, _ in outside})]
    samples = compare.samples(loaded)
    timing = verdicts.timing(frame, view.baseline, view.groups, view.threshold_pct, view.alpha, samples)
    numerics = verdicts.numerics(frame, view.baseline, view.groups) if not frame.empty else pd.DataFrame()
    failed_runs = [
        f"{group} round {results.round_of(doc)} ({file}): "
        f"{doc['failure']['stage']}: {doc['failure']['reason']}"
        for group, entries in docs.items() for doc, file in entries if doc["status"] != "ok"
    ]  # fmt: skip
    failed_runs += [f"{group}: no result file" for group in view.groups if not docs.get(group)]
    gate = verdicts.gate(timing, numerics, failed_runs, strict=strict)
    return Analysis(frame, timing, numerics, gate, docs, samples, tuple(outside))


@dataclass(frozen=True)
class Link:
    text: str
    href: str


@dataclass(frozen=True)
class Section:
    title: str
    intro: str = ""
    headers: tuple[str, ...] = ()
    rows: tuple[tuple[Any, ...], ...] = ()
    level: int = 2


@dataclass(frozen=True)
class Rendered:
    markdown: Path
    html: Path
    csv: Path
    verdict_json: Path


def render(
    view: View, analysis: Analysis, loaded: LoadedResults, out_dir: Path, sources: list[Path]
) -> Rendered:
    """Write report.md, report.html, results.csv, verdicts.csv and verdict.json into ``out_dir``."""
    from harness import html_report  # matplotlib is imported only when a report is written

    out_dir.mkdir(parents=True, exist_ok=True)
    letters = {g: chr(65 + i) if i < 26 else f"G{i}" for i, g in enumerate(view.groups)}
    sections = [
        _cells(view, analysis, out_dir, letters),
        *_problems(analysis, loaded),
        *_verdict_sections(view, analysis, out_dir, letters),
        *_numerics_sections(view, analysis, letters),
        _scaling_section(view, analysis, out_dir, letters),
        _environment(view, analysis, letters),
    ]
    sections = [s for s in sections if s is not None]
    title = f"{view.name}: {len(view.groups)} groups against {view.labels.get(view.baseline, view.baseline)}"
    header = _header(view, analysis, loaded, sources)
    markdown = out_dir / "report.md"
    jsonio.write_text_atomic(
        markdown, f"# {title}\n\n{header}\n\n" + "\n\n".join(_markdown(s) for s in sections) + "\n"
    )
    html = out_dir / "report.html"
    jsonio.write_text_atomic(html, html_report.page(title, header, sections, view, analysis, letters))
    csv = out_dir / "results.csv"
    jsonio.write_text_atomic(csv, analysis.frame.to_csv(index=False))
    jsonio.write_text_atomic(out_dir / "verdicts.csv", analysis.timing.to_csv(index=False))
    document = verdicts.document(
        name=view.name, baseline=view.baseline, groups=view.groups, labels=view.labels, alpha=view.alpha,
        default_pct=view.default_pct, timing_rows=analysis.timing, numerics_rows=analysis.numerics,
        result=analysis.gate, rounds={g: sum(d["status"] == "ok" for d, _ in e) for g, e in analysis.docs.items()},
    )  # fmt: skip
    problems = schemas.problems("verdict", document, "verdict.json")
    if problems:  # our own output must hold to our own schema; a bug here must not pass silently
        raise ValueError(
            "verdict.json does not match schemas/verdict.schema.json: " + "; ".join(map(str, problems[:3]))
        )
    verdict_json = out_dir / "verdict.json"
    jsonio.write_atomic(verdict_json, document)
    return Rendered(markdown, html, csv, verdict_json)


def _header(view: View, analysis: Analysis, loaded: LoadedResults, sources: list[Path]) -> str:
    gate = analysis.gate
    return "\n".join([
        f"Rendered {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC by `python -m harness` from "
        + ", ".join(f"`{s}`" for s in sources)
        + f" ({len(loaded.documents)} valid result files, {len(loaded.quarantined)} quarantined"
        + (f", {len(loaded.duplicates)} duplicates counted once" if loaded.duplicates else "")
        + f"); {view.note}.",
        "",
        f"**Outcome: {gate.outcome}** (exit code {gate.exit_code}). Each row compares a group with the baseline: "
        "the ratio is candidate median / baseline median (above 1 is slower), over the per-round medians of "
        "independent processes, with a "
        f"{int(100 * 0.99)}% bootstrap interval and a two-sided Mann-Whitney U test. A row is **slower** only when "
        f"p < {view.alpha:g} and the ratio reaches the threshold ({view.default_pct:g}% unless set per workload); "
        "**same** when the whole interval lies inside the threshold; otherwise **inconclusive**, which is not a pass. "
        "With one round per side the ratio and interval come from that one process's raw samples (basis "
        "`samples`) and the row stays inconclusive: one process cannot separate a change from process-to-process "
        "variation.",
        "",
        "```",
        *gate.lines,
        "```",
    ])  # fmt: skip


def _link(text: str, file: str | None, out_dir: Path) -> Any:
    return Link(text, os.path.relpath(file, out_dir)) if file else text


def _cells(view: View, analysis: Analysis, out_dir: Path, letters: dict[str, str]) -> Section:
    rows = []
    for group in view.groups:
        entries = analysis.docs.get(group, [])
        ok = [(d, f) for d, f in entries if d["status"] == "ok"]
        doc = ok[0][0] if ok else (entries[0][0] if entries else {})
        cudnn = doc.get("cudnn") or {}
        files = [_link(f"r{results.round_of(d)}", f, out_dir) for d, f in entries]
        rows.append((
            letters[group], group + (" (baseline)" if group == view.baseline else ""), view.labels.get(group, group),
            f"{len(ok)}/{len(entries)} ok" + (f", {view.rounds} asked" if view.rounds else ""),
            doc.get("device", ""), cudnn.get("runtime_version") or ("none" if doc else ""),
            "\n".join(cudnn.get("loaded_dirs", [])), cudnn.get("verification", ""), files,
        ))  # fmt: skip
    return Section("Groups (cells)", "", ("", "id", "torch / cuDNN asked for", "rounds", "device",
                   "cuDNN torch reported", "cuDNN library dir loaded", "check", "result files"), tuple(rows))  # fmt: skip


def _problems(analysis: Analysis, loaded: LoadedResults) -> list[Section]:
    out = []
    if analysis.gate.failed_runs:
        out.append(Section("Failed runs", "These runs failed: nothing they measured before failing is compared; "
                           "they make the outcome an infrastructure failure unless a regression outranks it.", ("run",),
                           tuple((r,) for r in analysis.gate.failed_runs)))  # fmt: skip
    if loaded.quarantined:
        rows = tuple((q.name, "\n".join(q.problems[:5])) for q in loaded.quarantined)
        out.append(Section("Quarantined result files (not merged)", "", ("file", "problems"), rows))
    if loaded.duplicates:
        rows = tuple((d.name, d.same_as) for d in loaded.duplicates)
        out.append(Section("Duplicate result files (counted once)", "These files hold a run already read from "
                           "another file (same cell, same start and finish): a copy is not another round.",
                           ("file", "the same run as"), rows))  # fmt: skip
    if analysis.outside:
        out.append(Section("Result files of cells not in the plan (not compared)", "plan.json does not list "
                           "these cells (the matrix was edited, or the files came from elsewhere).",
                           ("file", "cell"), analysis.outside))  # fmt: skip
    warnings = sorted({(g, w) for g, e in analysis.docs.items() for d, _ in e for w in d.get("warnings", [])})
    if warnings:
        out.append(Section("Warnings", "", ("group", "warning"), tuple(warnings)))
    return out


def _median_entry(frame: pd.DataFrame, group: str, key: tuple[str, str, str]) -> tuple[float, str] | None:
    rows = frame[(frame["group"] == group) & (frame["status"] == "ok") & (frame["workload"] == key[0])
                 & (frame["dtype"] == key[1]) & (frame["knobs"] == key[2])].sort_values("median_s")  # fmt: skip
    if rows.empty:
        return None
    row = rows.iloc[(len(rows) - 1) // 2]  # the lower median: one file's own value
    return float(row["median_s"]), str(row["file"])


def _verdict_sections(
    view: View, analysis: Analysis, out_dir: Path, letters: dict[str, str]
) -> list[Section]:
    timing = analysis.timing
    if timing.empty or timing["verdict"].notna().sum() == 0:
        return [Section("Verdicts", "No comparison: no measurement succeeded on both sides.")]
    judged = timing[timing["verdict"].notna()].copy()
    judged["order"] = judged["verdict"].map(VERDICT_ORDER)
    judged = judged.sort_values(["order", "ratio"], ascending=[True, False])
    frame = analysis.frame
    rows = []
    for r in judged.itertuples():
        key = (r.workload, r.dtype, r.knobs)
        base, mine = _median_entry(frame, view.baseline, key), _median_entry(frame, r.group, key)
        ratio = f"{r.ratio:.3f}" if _finite(r.ratio) else ""
        interval = f"[{r.ci_low:.3f}, {r.ci_high:.3f}]" if _finite(r.ci_low) and _finite(r.ci_high) else ""
        rows.append((
            r.workload, r.dtype, r.knobs, letters.get(r.group, r.group),
            _link(_duration(base[0]), base[1], out_dir) if base else "—",
            _link(_duration(mine[0]), mine[1], out_dir) if mine else "—",
            ratio, interval, f"{r.p_value:.2g}" if _finite(r.p_value) else "",
            f"{r.rounds_baseline}+{r.rounds_candidate}" + (" (samples)" if r.basis == "samples" else ""),
            MARK[r.verdict], "" if r.verdict == "same" else (r.reason or ""),
        ))  # fmt: skip
    legend = "; ".join(f"**{letters[g]}** = {view.labels.get(g, g)}" + (" (baseline)" if g == view.baseline else "")
                       for g in view.groups)  # fmt: skip
    section = Section(
        "Verdicts against the baseline",
        legend + ". Times are the median over rounds of each round's median time per call (the lower median, so "
        "the number is one result file's own value: it links to that file).",
        ("workload", "dtype", "knobs", "vs", "baseline", "candidate", "time ratio", "99% interval", "p",
         "rounds", "verdict", "why"), tuple(rows))  # fmt: skip
    out = [section]
    host = _host_section(view, analysis, out_dir, letters)
    if host:
        out.append(host)
    return out


def _host_section(view: View, analysis: Analysis, out_dir: Path, letters: dict[str, str]) -> Section | None:
    frame = analysis.frame
    if "host_s" not in frame or frame["host_s"].isna().all():
        return None
    ok = frame[(frame["status"] == "ok") & frame["host_s"].notna()].sort_values("host_s")
    rows = []
    for (group, *key), runs in ok.groupby(["group", *KEYS], sort=False):
        run = runs.iloc[(len(runs) - 1) // 2]  # the lower median over rounds: one file's own value
        rows.append((*key, letters.get(group, group), _link(_duration(run["median_s"]), run["file"], out_dir),
                     _link(_duration(run["host_s"]), run["file"], out_dir), f"{run['host_s'] / run['median_s']:.2f}"))  # fmt: skip
    return Section("Host time per call", "Host wall time per call over blocks of back-to-back calls (warm L2, "
                   "synchronized only at block ends), beside the device time of the same round. A ratio well above 1 "
                   "marks a host-bound workload, where framework overhead rather than cuDNN sets the pace.",
                   ("workload", "dtype", "knobs", "group", "device time", "host time", "host / device"),
                   tuple(rows), level=3)  # fmt: skip


def _scaling_section(
    view: View, analysis: Analysis, out_dir: Path, letters: dict[str, str]
) -> Section | None:
    """Multi-GPU workloads (DDP): step time and samples/s per world size, and the scaling efficiency."""
    rows = []
    for group in view.groups:
        for doc, file in analysis.docs.get(group, []):
            for m in doc["measurements"]:
                scaling = m.get("scaling") if m["status"] == "ok" else None
                if not scaling:
                    continue
                per_size = zip(
                    scaling["world_sizes"], scaling["median_step_s"], scaling["samples_per_s"], strict=True
                )
                rows.append((
                    letters.get(group, group), results.round_of(doc), m["workload"], m["dtype"],
                    "; ".join(f"{size}: {_duration(step)}, {rate:,.0f}/s" for size, step, rate in per_size),
                    _link(f"{scaling['efficiency']:.3f}" if scaling["efficiency"] is not None else "one GPU", file, out_dir),
                ))  # fmt: skip
    if not rows:
        return None
    return Section("Multi-GPU scaling", "Workloads that run one process per GPU, measured at each world size with the "
                   "same batch per process: the median step time and samples per second for each, and the scaling "
                   "efficiency t(1) / t(N) (1.0: N GPUs give N times the samples per second of one).",
                   ("group", "round", "workload", "dtype", "world size: step, samples/s", "efficiency"),
                   tuple(rows))  # fmt: skip


def _numerics_sections(view: View, analysis: Analysis, letters: dict[str, str]) -> list[Section]:
    num = analysis.numerics
    if num.empty:
        return []
    summary = []
    for group, rows in num.groupby("group", sort=False):
        summary.append((letters.get(group, group), group, len(rows), int((rows["numerics"] == "worse").sum()),
                        int((rows["numerics"] == "unchecked").sum()), f"{int(rows['same_digest'].sum())}/{len(rows)}",
                        int((~rows["repeatable_baseline"]).sum()), int((~rows["repeatable_candidate"]).sum())))  # fmt: skip
    out = [Section(
        "Numerics against the baseline",
        "Per measurement, the error against the same workload in fp64 (relative RMSE, worst round) in the candidate "
        "may grow to m x the baseline's + tol/10 (m = 2 for fp32/TF32, 3 for bf16/fp16; tol 1e-4 fp32, 1e-3 "
        "TF32/fp16, 1e-2 bf16: TorchDynamo's rule, measurement.md 9.5); more NaNs than the baseline also fail. "
        "Output digests are compared bit for bit; 'not repeatable' counts measurements whose two calls differed.",
        ("", "group", "compared", "worse", "unchecked", "same digest as baseline", "not repeatable (baseline)",
         "not repeatable (candidate)"), tuple(summary))]  # fmt: skip
    flagged = num[num["numerics"] != "ok"]
    if not flagged.empty:
        rows = tuple((letters.get(r.group, r.group), r.workload, r.dtype, r.knobs, r.numerics,
                      f"{r.rel_rmse_baseline:.2e}" if _finite(r.rel_rmse_baseline) else "",
                      f"{r.rel_rmse_candidate:.2e}" if _finite(r.rel_rmse_candidate) else "", r.reason)
                     for r in flagged.itertuples())  # fmt: skip
        out.append(Section("Numerics: flagged", "", ("group", "workload", "dtype", "knobs", "numerics",
                           "rel. RMSE baseline", "rel. RMSE candidate", "why"), rows, level=3))  # fmt: skip
    return out


def _environment(view: View, analysis: Analysis, letters: dict[str, str]) -> Section | None:
    rows = []
    uuids: set[str] = set()
    for group in view.groups:
        for doc, _ in analysis.docs.get(group, []):
            env = doc.get("environment")
            if not env:
                continue
            gpu = env.get("gpu") or {}
            cudnn = doc.get("cudnn") or {}
            if gpu.get("uuid"):
                uuids.add(gpu["uuid"])
            rows.append((
                letters[group], f"r{results.round_of(doc)}", env["torch"]["version"],
                env["torch"].get("cuda") or "none",
                f"{cudnn.get('runtime_version') or 'none'} (built for {cudnn.get('compile_version') or 'none'})",
                "\n".join(cudnn.get("loaded_libraries", [])) or "none", gpu.get("name", "none (CPU)"),
                str(gpu.get("uuid") or "")[:8], gpu.get("driver_version") or "",
                (gpu.get("nvidia_smi") or {}).get("clocks.max.sm", ""),
                env["python"]["version"], env["host"].get("os", ""), env["host"].get("cpu_model") or "",
                doc.get("suite_version"),
            ))  # fmt: skip
    if not rows:
        return None
    # Two GPUs of one model differ by more than two processes on one GPU (suite 0.4 on two H100s: A/A
    # p95 1.9 %; suite 0.5 on one: 0.74 %, reports/gpu-aa-0.5), so a reader must know when runs were spread.
    intro = (
        f"These runs used {len(uuids)} physical GPUs (GPU id column): the differences between them are "
        "part of every comparison here, and A/A noise across GPUs is larger than on one."
        if len(uuids) > 1
        else ""
    )
    return Section("Environment of every run", intro, ("group", "round", "torch", "CUDA", "cuDNN runtime",
                   "cuDNN files mapped", "GPU", "GPU id", "driver", "max SM clock", "Python", "OS", "CPU", "suite"),
                   tuple(rows))  # fmt: skip


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


def _duration(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.3f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds * 1e6:.1f} µs"


def _markdown(section: Section) -> str:
    text = f"{'#' * section.level} {section.title}"
    if section.intro:
        text += f"\n\n{section.intro}"
    if section.headers:
        text += "\n\n" + _table([list(r) for r in section.rows], list(section.headers))
    return text


def _md_cell(value: Any) -> str:
    if isinstance(value, Link):
        return f"[{_escape(value.text)}]({value.href.replace(' ', '%20').replace(')', '%29')})"
    if isinstance(value, list):
        return " ".join(_md_cell(v) for v in value)
    text = "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)
    return _escape(text)


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", "").replace("\n", "<br>")


def _table(rows: list[list[Any]], headers: list[str]) -> str:
    """A GitHub table whose cells can never break it: pipes escaped, line breaks as <br>."""
    return tabulate(
        [[_md_cell(v) for v in row] for row in rows],
        headers=[_escape(h) for h in headers],
        tablefmt="github",
        disable_numparse=True,
    )

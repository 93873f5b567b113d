"""The top of a report: the answer before the method. One line of environment, the outcome, which cuDNN
this host should use for the rows measured (``host_answer``: in their precision modes, with the cells the
plan left out here and why), what may make the numbers less than they seem (validity), and a scorecard
with one row per candidate group."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from harness.errors import InputError
from harness.plan.axes import AXIS_NAMES
from harness.plan.model import Cell, LeftOut, Plan
from harness.report.analysis import row_verdicts, stats
from harness.report.analysis.model import Analysis, View
from harness.report.analysis.row_verdicts import TimingRow
from harness.report.sections.context import SectionContext, listed
from harness.report.writers import markdown
from harness.report.writers.document import Section, Value
from harness.results import folder
from harness.suite import precision
from harness.suite.document import ResultDocument

# Spread that makes a number shaky: pyperf warns from a 10 % standard deviation within a run; between the
# rounds of one cell, 5 % is far outside what two processes on one GPU differ by (docs/method.md).
WITHIN_RUN_SPREAD = 0.10  # IQR / median of one measurement's samples
BETWEEN_ROUNDS_SPREAD = 0.05  # coefficient of variation of one row's per-round medians


def environment_line(view: View, analysis: Analysis) -> str:
    """GPU, driver, torch, CUDA, suite and profile in one line, as most runs recorded them."""
    seen: dict[str, list[str]] = {k: [] for k in ("gpu", "driver", "torch", "cuda", "suite", "profile")}
    for entries in analysis.docs.values():
        for doc, _ in entries:
            env = doc.get("environment")
            gpu = (env["gpu"] if env else None) or {}
            seen["gpu"].append(str(gpu.get("name") or "CPU"))
            seen["driver"].append(str(gpu.get("driver_version") or ""))
            seen["torch"].append(env["torch"]["version"] if env else "")
            seen["cuda"].append(str(env["torch"].get("cuda") or "") if env else "")
            seen["suite"].append(str(doc.get("suite_version") or ""))
            seen["profile"].append(str(doc.get("profile") or ""))
    if not seen["gpu"]:
        return "No run produced a result."
    words = {k: _common(v) for k, v in seen.items()}
    parts = [
        words["gpu"],
        f"driver {words['driver']}" if words["driver"] else "",
        f"torch {words['torch']}" if words["torch"] else "",
        f"CUDA {words['cuda']}" if words["cuda"] else "",
        f"suite {words['suite']}, profile {words['profile']}",
        f"{sum(len(e) for e in analysis.docs.values())} runs",
    ]
    return " · ".join(p for p in parts if p)


def _common(values: list[str]) -> str:
    distinct = list(dict.fromkeys(v for v in values if v))
    if len(distinct) <= 1:
        return distinct[0] if distinct else ""
    return " / ".join(distinct[:3]) + (" ..." if len(distinct) > 3 else "") + " (mixed)"


def outcome_line(analysis: Analysis) -> str:
    gate = analysis.gate
    counts = ", ".join(f"{n} {v}" for v, n in gate.counts.items() if n)
    worse = f"; numerics worse in {gate.numerics_worse}" if gate.numerics_worse else ""
    failed = f"; {len(gate.failed_runs)} runs failed" if gate.failed_runs else ""
    summary = counts or "no rows compared"
    return f"**Outcome: {gate.outcome}** (exit code {gate.exit_code}): {summary}{worse}{failed}."


def scorecard_section(ctx: SectionContext) -> list[Section]:
    """The answer for this host (``host_answer``) and the scorecard (``scorecard``): the report's first
    sections."""
    return [*listed(host_answer(ctx)), *listed(scorecard(ctx.view, ctx.analysis))]


ANSWER = "Which cuDNN for this host"


def host_answer(ctx: SectionContext) -> Section | None:
    """Which cuDNN this host should use, for the rows measured, in their precision modes: keep the baseline
    or switch (as "What to do next" decides), each other source's rows by verdict, and the cells the plan
    left out here with why. On a CPU, that the run checked the harness (A/A) and answers no such question.
    None for an ad-hoc compare (its sides are no matrix's cells) or where nothing is to be said."""
    view, analysis = ctx.view, ctx.analysis
    if not view.cells:
        return None
    plans = stored_plans(ctx.sources)
    timing = analysis.timing
    judged = timing[timing["verdict"].notna()] if not timing.empty else timing
    parts = []
    if not judged.empty:
        names = cudnn_names(view, analysis)
        parts.append(_verdict_sentence(view, analysis, judged, names))
        how = {c.cell_id: f"{c.written.label.replace(':', ': ')}: {c.how}" for p in plans for c in p.chosen}
        parts += [
            f"- {_candidate_line(view, group, rows, names)}"
            + (f" ({markdown.inline(how[group])})." if group in how else ".")
            for group, rows in _candidates(view, judged)
        ]
    left = left_out_sentence(plans)
    if left:
        parts.append(("\n" if parts else "") + left)
    return Section(ANSWER, "\n".join(parts)) if parts else None


def stored_plans(sources: Sequence[Path]) -> list[Plan]:
    """The plan.json of each results folder among ``sources`` that holds a sound one."""
    plans = []
    for source in dict.fromkeys(sources):
        try:
            if source.is_dir() and (source / folder.PLAN_FILE).is_file():
                plans.append(folder.stored_plan(source))
        except (InputError, OSError):
            continue  # the report says what is wrong with a folder where it reads its results
    return plans


def left_out_sentence(plans: Sequence[Plan]) -> str:
    """The cells the plans left out on the host that made them, with why, those of one reason together
    ('' where none was)."""
    left: list[LeftOut] = list(dict.fromkeys(left for plan in plans for left in plan.left_out))
    if not left:
        return ""
    torches = {left.cell.torch for left in left} | {c.torch for plan in plans for c in plan.cells}
    by_why: dict[str, list[str]] = {}
    for each in left:
        by_why.setdefault(each.why, []).append(_written(each.cell, len(torches) > 1))
    told = "; ".join(f"{_joined(cells)}: {why}" for why, cells in by_why.items())
    return f"**Left out on this host** (named, not run, not failed): {markdown.inline(told)}."


def _written(cell: Cell, with_torch: bool) -> str:
    """A left-out cell's source as a reader names it, and as the matrix wrote it where that says more."""
    source = cell.cudnn.words
    if cell.cudnn.value is not None:
        source += f" ({cell.cudnn.label.replace(':', ': ')})"
    return f"{source} with torch {cell.torch}" if with_torch else source


def _joined(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def all_runs(analysis: Analysis) -> list[ResultDocument]:
    """Every run's result document, group by group."""
    return [doc for entries in analysis.docs.values() for doc, _ in entries]


def cudnn_names(view: View, analysis: Analysis) -> dict[str, str]:
    """Each group's cuDNN as a reader names it, with the version its runs loaded (``PyTorch's cuDNN
    9.19.0``, ``NVIDIA's system cuDNN 9.14.0``, ``PyPI's cuDNN 9.28.1.4``), and its torch where the cells
    differ in it; where every run was on a CPU and the cells differ in torch, its torch alone (``torch
    2.13.0``): no cuDNN ran."""
    cells = {c.id: c for c in view.cells}
    several = len({c.torch for c in view.cells}) > 1
    runs = all_runs(analysis)
    on_cpu = bool(runs) and all(doc.get("device") == "cpu" for doc in runs)
    names = {}
    for group in view.groups:
        cell = cells.get(group)
        if cell is None:
            names[group] = view.labels.get(group, group)
            continue
        if on_cpu and several:  # cuDNN does not run on a CPU: a group is its torch build there
            names[group] = f"torch {cell.torch}"
            continue
        loaded = _common(
            [
                str(doc["cudnn"].get("runtime_version") or "")
                for doc, _ in analysis.docs.get(group, [])
                if "cudnn" in doc
            ]
        )
        name = cell.cudnn.words
        if cell.cudnn.kind in ("bundled", "system") and loaded and "(mixed)" not in loaded:
            name = f"{name.removesuffix(' ' + str(cell.cudnn.value))} {loaded}"
        names[group] = f"{name} (torch {cell.torch})" if several else name
    return names


def standing(rows: pd.DataFrame, numerics_worse: bool) -> str:
    """A candidate's standing against the baseline over its judged ``rows``: 'worse' (a row slower or
    failed, or its numerics worse), 'better' (faster somewhere, and nothing else undecided), else ''."""
    counts = rows["verdict"].value_counts()
    if counts.get("slower", 0) or counts.get("failed", 0) or numerics_worse:
        return "worse"
    if counts.get("faster", 0) and not counts.get("inconclusive", 0) and not counts.get("missing", 0):
        return "better"
    return ""


def numerics_worse(analysis: Analysis) -> set[str]:
    """The groups whose numerics are worse than the baseline's somewhere."""
    numerics = analysis.numerics
    return set(numerics["group"][numerics["numerics"] == "worse"]) if not numerics.empty else set()


def _candidates(view: View, judged: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    return [
        (g, judged[judged["group"] == g])
        for g in view.groups
        if g != view.baseline and (judged["group"] == g).any()
    ]


def modes(rows: pd.DataFrame) -> list[str]:
    """The precision modes of ``rows`` as a reader names them (``precision.label``): PyTorch's default
    first."""
    seen = {
        (str(dtype), "tf32=1" in str(knobs))
        for dtype, knobs in zip(rows["dtype"], rows["knobs"], strict=True)
    }
    order = {mode: i for i, mode in enumerate(precision.MODES)}
    return list(
        dict.fromkeys(
            precision.label(d, tf32) for d, tf32 in sorted(seen, key=lambda s: (order.get(s[0], 99), s))
        )
    )


def _verdict_sentence(view: View, analysis: Analysis, judged: pd.DataFrame, names: dict[str, str]) -> str:
    """On this host, for these rows in these modes: keep the baseline, or use the one shown better (the A/A
    check on a CPU instead, which answers no such question)."""
    host = _host(analysis)
    rows = judged.drop_duplicates(["workload", "dtype", "knobs"])
    count = f"these {len(rows)} rows" if len(rows) > 1 else "the 1 row"
    scope = f"for {count} in {_joined(modes(rows))}"
    kept = markdown.inline(names[view.baseline])
    baseline = f"**{kept}** ({view.letters[view.baseline]}, the baseline)"
    if cpu_a_a(analysis):
        others = _joined([f"**{markdown.inline(names[g])}**" for g, _ in _candidates(view, judged)])
        return (
            f"On this CPU cuDNN is not used: {scope}, {baseline} and {others} run the same code, so this "
            "run checks the harness against itself (A/A) and answers no question of which cuDNN to use; "
            "run it on a GPU host for that."
        )
    worse = numerics_worse(analysis)
    better = [
        (stats.geomean(rows["ratio"]) or 1.0, group)
        for group, rows in _candidates(view, judged)
        if standing(rows, group in worse) == "better"
    ]
    if better:
        group = min(better)[1]
        faster = int((judged[judged["group"] == group]["verdict"] == "faster").sum())
        choice = (
            f"**use {markdown.inline(names[group])}** ({view.letters[group]}): faster than {baseline} in "
            f"{faster} of them, slower in none, none undecided"
        )
    else:
        choice = f"**keep {kept}** ({view.letters[view.baseline]}, the baseline): no other is shown better"
    if host == "this CPU":  # the cells differ in more than cuDNN (a torch build): what ran is CPU code
        choice += "; cuDNN is not used on a CPU, so this compares what else the cells differ in, not cuDNN"
    return f"On {host}, {scope}: {choice}."


def _host(analysis: Analysis) -> str:
    """The GPU the runs ran on (or the CPU), as "this ..." says it."""
    names = []
    for entries in analysis.docs.values():
        for doc, _ in entries:
            env = doc.get("environment")
            gpu = (env["gpu"] if env else None) or {}
            names.append(str(gpu.get("name") or "CPU"))
    common = _common(names)
    if not common:
        return "this host"
    return "this CPU" if common == "CPU" else f"this **{markdown.inline(common)}**"


def _candidate_line(view: View, group: str, rows: pd.DataFrame, names: dict[str, str]) -> str:
    """One candidate's rows by verdict, the slower and faster ones by mode, with the largest change."""
    counts = rows["verdict"].value_counts()
    parts = []
    for verdict, word in (
        ("slower", "slower"),
        ("faster", "faster"),
        ("same", "the same"),
        ("inconclusive", "undecided"),
        ("missing", "missing"),
        ("failed", "failed"),
    ):
        count = int(counts.get(verdict, 0))
        if not count:
            continue
        text = f"{word} in {count} row" + ("s" if count > 1 else "")
        if verdict in ("slower", "faster"):
            mine = rows[rows["verdict"] == verdict]
            by_mode = [f"{len(mine[_in_mode(mine, m)])} {m}" for m in modes(mine)]
            by_mode = by_mode if len(by_mode) > 1 else modes(mine)
            largest = max(row_verdicts.records(mine), key=lambda r: stats.change_size(r.get("ratio")))
            mode = precision.label(str(largest["dtype"]), "tf32=1" in str(largest["knobs"]))
            change = f"{largest['workload']} {mode}, {stats.change_words(largest['ratio'])}"
            if count == 1:
                text += f" ({change})"
            else:
                text += (
                    f" ({', '.join(by_mode) if len(by_mode) > 1 else 'all ' + by_mode[0]}; largest: {change})"
                )
        parts.append(text)
    return f"{view.letters[group]}: **{markdown.inline(names[group])}**: {markdown.inline(', '.join(parts))}"


def _in_mode(rows: pd.DataFrame, mode: str) -> pd.Series[bool]:
    labels = [
        precision.label(str(d), "tf32=1" in str(k)) for d, k in zip(rows["dtype"], rows["knobs"], strict=True)
    ]
    return pd.Series([label == mode for label in labels], index=rows.index)


def read_first(ctx: SectionContext) -> list[Section]:
    return listed(_read_first(ctx.view, ctx.analysis))


def _read_first(view: View, analysis: Analysis) -> Section | None:
    found = validity(view, analysis)
    if not found:
        return None
    return Section(
        "Read this first",
        "",
        ("what may make these numbers less than they seem",),
        tuple((s,) for s in found),
    )


def validity(view: View, analysis: Analysis) -> list[str]:
    """What a reader must know before trusting the table: each a sentence, most serious first, naming
    groups by letter and label."""
    return [
        *(f"{caution[0].upper()}{caution[1:]}." for caution in view.cautions),
        *_short_of_rounds(view, analysis),
        *_validity(analysis, lambda group: f"{view.letters[group]} ({view.labels.get(group, group)})"),
    ]


def _short_of_rounds(view: View, analysis: Analysis) -> list[str]:
    """The groups that hold fewer rounds than every row is asked for (the matrix's rounds, at most the 3
    that ``qualify`` runs of every row before it stops early), and what a run again into the folder does
    about it: where a busy host spoiled the rows, qualify stopped there and stops there again (it keeps
    the spoiled rounds); else the run stopped before its end, and a run again resumes it."""
    every_row = min(view.rounds, stats.WELCH_MIN_ROUNDS)
    held = {g: len(analysis.docs.get(g, [])) for g in view.groups}
    short = {g: n for g, n in held.items() if 0 < n < every_row}
    if not short:
        return []
    which = ", ".join(f"{view.letters[g]} {n}" for g, n in short.items())
    then = (
        "a busy or stalled host spoiled their rows, so a run again into this folder keeps these rounds "
        "and adds none"
        if spoiled_rows(analysis)
        else "a run again into this folder adds the missing rounds"
    )
    return [
        f"{len(short)} of the {len(view.groups)} groups hold fewer rounds than the {every_row} asked of "
        f"every row ({which}): under {stats.WELCH_MIN_ROUNDS} a side no row gets a verdict, same included; "
        f"{then} (What to do next has the command)."
    ]


def spoiled_rows(analysis: Analysis) -> int:
    """The undecided rows a busy or stalled host spoiled: no later round decides them (qualify never runs
    them again, and a run again keeps their rounds); only a fresh measurement does."""
    timing = analysis.timing
    if timing.empty or "spoiled" not in timing:
        return 0
    return sum(isinstance(s, str) and bool(s) for s in timing["spoiled"])


def gpu_uuids(analysis: Analysis) -> set[str]:
    """The physical GPUs the runs recorded."""
    uuids = set()
    for entries in analysis.docs.values():
        for doc, _ in entries:
            env = doc.get("environment")
            gpu = (env["gpu"] if env else None) or {}
            if gpu.get("uuid"):
                uuids.add(str(gpu["uuid"]))
    return uuids


def _validity(analysis: Analysis, name: Callable[[str], str] = str) -> list[str]:
    """The sentences of ``validity``; ``name`` says a group as the reader knows it."""
    found = [*_busy_host(analysis), *cpu_a_a(analysis)]
    uuids = gpu_uuids(analysis)
    if len(uuids) > 1:
        found.append(
            f"The runs were spread over {len(uuids)} physical GPUs: the differences between GPUs are part "
            "of every comparison (an A/A across two GPUs of one model is wider than on one: docs/method.md); "
            "see Environment of every run."
        )
    overridden = sorted(
        {
            group
            for group, entries in analysis.docs.items()
            for doc, _ in entries
            if "cudnn" in doc and doc["cudnn"].get("compat_check_overridden")
        }
    )
    if overridden:
        which = ", ".join(name(group) for group in overridden)
        found.append(
            f"{which} ran a cuDNN that its torch refuses by default (older than it was built against), "
            "with PYTORCH_SKIP_CUDNN_COMPATIBILITY_CHECK=1: a setup torch does not support."
        )
    anyway = sorted(
        {
            (group, warning)
            for group, entries in analysis.docs.items()
            for doc, _ in entries
            for warning in doc.get("warnings", [])
            if warning.startswith("cuDNN was disabled, yet")
        }
    )
    for group, warning in anyway[:3]:
        found.append(f"{name(group)}: {warning}.")
    timing = analysis.timing
    if "two_speeds" in timing and timing["two_speeds"].notna().any():
        found.append(
            f"{int(timing['two_speeds'].notna().sum())} rows ran at two speeds on the GPU (windows as far "
            "apart as their threshold while the power limit held the clock): slower or faster only beyond "
            "that gap or by the rank test of 7 rounds a side; their reasons say where."
        )
    frame = analysis.frame
    if "what_ran_error" in frame and frame["what_ran_error"].notna().any():
        errors = frame["what_ran_error"].dropna()
        found.append(
            f"{len(errors)} measurements could not record what ran ({errors.iloc[0]}): their rows cannot "
            "say whether the same kernels ran on both sides."
        )
    noisy_runs, noisy_rows = _spread(analysis.frame)
    if noisy_runs:
        found.append(
            f"{noisy_runs} measurements spread by more than {WITHIN_RUN_SPREAD:.0%} (IQR / median) within "
            "their run: their medians are less certain than the rest."
        )
    if noisy_rows:
        found.append(
            f"{noisy_rows} workload rows vary between the rounds of one group by more than "
            f"{BETWEEN_ROUNDS_SPREAD:.0%} (coefficient of variation of the round medians): their verdicts "
            "rest on noisy rounds."
        )
    beyond = analysis.beyond_tolerance
    if not beyond.empty:
        found.append(
            f"{len(beyond)} measurements are beyond their dtype's numerics tolerance (listed under Numerics "
            "beyond tolerance)."
        )
    return found


def _busy_host(analysis: Analysis) -> list[str]:
    """The runs a busy or stalled host spoiled: their rows are inconclusive, never a verdict."""
    runs = all_runs(analysis)
    busy = [doc["host"] for doc in runs if doc.get("host") and doc["host"]["busy"]]
    frame = analysis.frame
    stalled = int(frame["stalled"].notna().sum()) if "stalled" in frame else 0
    if not busy and not stalled:
        return []
    if busy:
        more = f", and {stalled} measurements stalled" if stalled else ""
        spoiled = f"The host was busy in {len(busy)} of {len(runs)} runs ({busy[0]['why']}){more}"
    else:
        spoiled = (
            f"{stalled} measurements stalled (samples a scheduler tick or more above their fastest), though "
            f"no run of the {len(runs)} found the host busy"
        )
    return [  # two entries, so that a long reason never cuts the advice short in a table's line
        f"{spoiled}: on a CPU every sample is host time, so another process's work is in them. Their rows "
        "are inconclusive, never a verdict.",
        "Run again with nothing else running (load under the cores) and --fresh, so that the spoiled rounds "
        "are moved aside, not kept (What to do next has the command).",
    ]


def cpu_a_a(analysis: Analysis) -> list[str]:
    """On a CPU, cells that differ only in their cuDNN source run the same code: an A/A check."""
    runs = all_runs(analysis)
    cells = {tuple(doc.get("cell", {}).get(axis) for axis in AXIS_NAMES if axis != "cudnn") for doc in runs}
    if len(analysis.docs) < 2 or not runs or len(cells) != 1 or any(d.get("device") != "cpu" for d in runs):
        return []
    return [
        "On a CPU cuDNN is not used: these cells differ only in their cuDNN source, so they run the same "
        "code, and this report checks the harness against itself (A/A): same is the right answer for "
        "every row, and any other verdict is the host's noise or the harness's error."
    ]


def _spread(frame: pd.DataFrame) -> tuple[int, int]:
    if frame.empty or "rel_iqr" not in frame:
        return 0, 0
    ok = frame[frame["status"] == "ok"]
    within = int((ok["rel_iqr"] > WITHIN_RUN_SPREAD).sum())
    between = 0
    for _, rows in ok.groupby(["group", "workload", "dtype", "knobs"], sort=False):
        medians = [m for m in rows["median_s"] if isinstance(m, float) and m > 0]
        if len(medians) >= 2 and statistics.stdev(medians) / statistics.mean(medians) > BETWEEN_ROUNDS_SPREAD:
            between += 1
    return within, between


def scorecard(view: View, analysis: Analysis) -> Section | None:
    """One row per candidate group: how its rows came out, by how much, and the largest change."""
    timing = analysis.timing
    if timing.empty:
        return None
    judged = timing[timing["verdict"].notna()]
    rows: list[tuple[Any, ...]] = []
    for group in view.groups:
        if group == view.baseline:
            continue
        mine = judged[judged["group"] == group]
        if mine.empty:
            continue
        counts = mine["verdict"].value_counts()
        geomean = stats.geomean(mine["ratio"])
        worst = _largest(row_verdicts.records(mine[mine["verdict"].isin(["slower", "faster"])]))
        numerics = analysis.numerics
        worse = (
            int(((numerics["group"] == group) & (numerics["numerics"] == "worse")).sum())
            if not numerics.empty
            else 0
        )
        warnings = {w for doc, _ in analysis.docs.get(group, []) for w in doc.get("warnings", [])}
        recorded = "what_ran" in mine and mine["what_ran"].notna().any()
        changed = int((mine["what_ran"] == "changed").sum()) if recorded else ""
        rows.append(
            (
                f"{view.letters[group]}: {view.labels.get(group, group)}",
                *(int(counts.get(v, 0)) for v in ("slower", "faster", "same", "inconclusive")),
                int(counts.get("failed", 0)) + int(counts.get("missing", 0)),
                Value(f"{geomean:.3f}", geomean, "number") if geomean else "",
                worst,
                worse,
                changed,
                len(warnings),
            )
        )
    return Section(
        "Scorecard",
        f"Against **{markdown.inline(view.labels.get(view.baseline, view.baseline))}**. failed: failed or "
        "missing rows; "
        "geomean: of the time ratios, candidate / baseline (above 1 is slower); other kernels: rows that "
        "did not run the baseline's.",
        (
            "group",
            "slower",
            "faster",
            "same",
            "inconclusive",
            "failed",
            "geomean",
            "largest change",
            "numerics worse",
            "other kernels",
            "warnings",
        ),
        tuple(rows),
    )


def _largest(rows: Iterable[TimingRow]) -> Value | str:
    best = max(rows, key=lambda r: stats.change_size(r.get("ratio")), default=None)
    if best is None or stats.change_size(best.get("ratio")) < 0:
        return ""
    text = f"{best['workload']} {best.get('mode') or best['dtype']}: {stats.change_words(best['ratio'])}"
    return Value(text, best["ratio"], "number")

"""The end of a report's answer: what to do next. Which cell to ship (or that none is shown better), the
command that resolves the inconclusive rows with what it would cost, the reproducer of each regression,
and how to compare what the plan left out on this host."""

from __future__ import annotations

import shlex
import statistics
from pathlib import Path
from typing import Any

import pandas as pd

from harness.plan.model import Plan
from harness.report.analysis import stats
from harness.report.analysis.model import Analysis, View
from harness.report.sections import answer
from harness.report.sections.context import SectionContext, listed
from harness.report.writers import markdown
from harness.report.writers.document import Section

MW_ROUNDS = 7  # a side's rounds where the Mann-Whitney test can reach alpha = 0.002
REPROS = 5  # regressions given a reproducer command here; the report lists every row
LABEL = 80  # characters of a group's label shown here
NAMES = 5  # groups named in one sentence; the scorecard lists every one


def what_to_do(ctx: SectionContext) -> list[Section]:
    """What to do next (``section``), at the end of the report's answer."""
    return listed(section(ctx.view, ctx.analysis, list(ctx.sources), ctx.view.matrix))


def section(view: View, analysis: Analysis, sources: list[Path], matrix: str | None) -> Section | None:
    """The section "What to do next", or None where no row was compared and the plan left nothing out."""
    timing = analysis.timing
    judged = timing[timing["verdict"].notna()] if not timing.empty else timing
    steps, commands = [], []
    if not judged.empty:
        steps.append(_ship(view, analysis, judged))
        undecided = judged[judged["verdict"].isin(["inconclusive", "missing"])]
        if not undecided.empty:
            # one step for every undecided row: where a busy host spoiled any, only a fresh measurement
            # on a quiet host decides them, and it measures the others again too
            resolve = _on_a_quiet_host if answer.spoiled_rows(analysis) else _resolve
            steps.append(resolve(view, analysis, undecided, sources, matrix))
        regressions = judged[judged["verdict"].isin(["slower", "failed"])]
        commands = _reproduce(regressions, sources) if not regressions.empty else []
        if commands:
            more = (
                f" ({len(regressions) - REPROS} more in the verdict table)"
                if len(regressions) > REPROS
                else ""
            )
            steps.append(f"Hand each regression upstream as a reproducer{more}: the commands below.")
    left = _left_out(answer.stored_plans(sources) if view.cells else [])
    if left:
        steps.append(left)
    if not steps:
        return None
    text = "\n".join(f"- {step}" for step in steps)
    if commands:  # a fenced block: a command's lines are never rewrapped or cut
        text += "\n\n" + markdown.fenced("\n".join(commands))
    return Section("What to do next", text)


def _name(view: View, group: str) -> str:
    return f"**{markdown.inline(view.labels.get(group, group), LABEL)}**"


def _ship(view: View, analysis: Analysis, judged: pd.DataFrame) -> str:
    """The cell shown better than the baseline (faster somewhere, never worse, nothing undecided), or that
    none is, and which cells a switch would regress."""
    baseline = _name(view, view.baseline)
    worse_numerics = answer.numerics_worse(analysis)
    better, regressed = [], []
    for group, rows in judged.groupby("group", sort=False):
        counts = rows["verdict"].value_counts()
        standing = answer.standing(rows, group in worse_numerics)
        if standing == "worse":
            regressed.append(
                f"{_name(view, str(group))} ({_counted(counts, ('slower', 'failed'))}"
                + (", numerics worse" if group in worse_numerics else "")
                + ")"
            )
        elif standing == "better":
            geomean = stats.geomean(rows["ratio"]) or 1.0
            better.append((geomean, str(group), int(counts["faster"]), len(rows)))
    if better:
        geomean, group, faster, measured = min(better)
        # the count of rows measured keeps the advice to what ran: a matrix of 3 rows says nothing of the rest
        text = (
            f"**Ship {markdown.inline(view.labels.get(group, group), LABEL)}**: of the {_rows(measured)} "
            f"measured, {faster} faster than {baseline} and none slower or undecided "
            f"(geometric mean of its ratios {geomean:.3f}); rows not measured here are not judged."
        )
    elif answer.cpu_a_a(analysis):  # the same code on both sides: nothing to keep or ship
        text = "Nothing to choose here: on a CPU these cells run the same code (Read this first)."
    else:
        text = f"No cell is shown better than {baseline}: **keep it**."
    if regressed:
        more = f" and {len(regressed) - NAMES} more" if len(regressed) > NAMES else ""
        text += " Switching to " + ", ".join(regressed[:NAMES]) + more + " would regress."
    return text


def _left_out(plans: list[Plan]) -> str:
    """What would bring the cells the plan left out on this host into a comparison: a host whose suite
    runs on the device they name, NVIDIA's cuDNN installed, a package source that holds the release (''
    where none was left out)."""
    left = [each for plan in plans for each in plan.left_out]
    if not left:
        return ""
    ways = []
    elsewhere = [each.why for each in left if each.elsewhere]
    if any("(device: cuda)" in why for why in elsewhere):
        ways.append("run the matrix on a host where the suite runs on a GPU")
    if any("(device: cpu)" in why for why in elsewhere):
        ways.append(
            "list a source marked device: cpu without that term (cuDNN disabled: the CPU's A/A check)"
        )
    kinds = {each.cell.cudnn.kind for each in left if not each.elsewhere}
    if "system" in kinds:
        ways.append("install NVIDIA's cuDNN for torch's CUDA (Debian's libcudnn9-cuda-NN) on this host")
    if "wheel" in kinds:
        ways.append(
            "give the run a package index it can reach, or a wheelhouse that holds nvidia-cudnn-cuNN wheels "
            "(its newest is chosen)"
        )
    count = f"{len(left)} cell" + ("s" if len(left) > 1 else "")
    how = "; or ".join(ways) or "give each a source this host can make"
    return (
        f"The plan left out {count} of the matrix on this host (report.md's Which cuDNN for this host says "
        f"why); to compare {'them' if len(left) > 1 else 'it'}, {how}, and qualify again."
    )


def _rows(count: int) -> str:
    return f"{count} row" if count == 1 else f"{count} rows"


def _counted(counts: pd.Series[Any], verdicts: tuple[str, ...]) -> str:
    return ", ".join(f"{int(counts[v])} {v}" for v in verdicts if counts.get(v, 0))


def _busy_runs(analysis: Analysis) -> tuple[int, int]:
    """(runs made on a busy host, all runs)."""
    runs = answer.all_runs(analysis)
    hosts = [doc.get("host") for doc in runs]
    return sum(bool(host and host["busy"]) for host in hosts), len(runs)


def _on_a_quiet_host(
    view: View, analysis: Analysis, undecided: pd.DataFrame, sources: list[Path], matrix: str | None
) -> str:
    """Where a busy host spoiled rows, more rounds decide nothing and a run again keeps what it spoiled
    (qualify runs none of those rows again): the same advice as "Read this first", to measure again,
    fresh, with the host quiet."""
    busy, runs = _busy_runs(analysis)
    spoiled = answer.spoiled_rows(analysis)
    host = f"A busy host (busy in {busy} of {runs} runs)" if busy else "A stalled host"
    which = "the" if spoiled >= len(undecided) else f"{spoiled} of the"
    said = (
        f"{host} spoiled {which} {len(undecided)} inconclusive or missing rows: more rounds do not decide "
        "those, and a run again into this folder keeps the rounds it spoiled and measures those rows no "
        "more."
    )
    command = _qualify(view, sources, matrix)
    if command:
        quiet = "With the host quiet (load under its cores),"
        return f"{said} {quiet} {markdown.code(command + ' --fresh')} moves them aside and measures again."
    return f"{said} Measure both sides again, with the host quiet (load under its cores), into new folders."


def _qualify(view: View, sources: list[Path], matrix: str | None) -> str | None:
    """The qualify command that measures these groups again into their folder (None: no matrix to name)."""
    if not (matrix and view.cells):
        return None
    out = shlex.quote(str(sources[0])) if sources else "results/" + view.name
    return f"python -m harness qualify --matrix {shlex.quote(matrix)} --out {out}"


def _resolve(
    view: View, analysis: Analysis, undecided: pd.DataFrame, sources: list[Path], matrix: str | None
) -> str:
    """The command that decides the inconclusive rows, the rounds it takes them to and its cost, estimated
    from what these runs took (a later round measures only the undecided rows again)."""
    have = int(max(undecided["rounds_baseline"].max(), undecided["rounds_candidate"].max()))
    target = MW_ROUNDS if have < MW_ROUNDS else have + 4
    groups = [view.baseline, *dict.fromkeys(str(g) for g in undecided["group"])]
    seconds = 0.0
    for group in groups:
        runs = [doc for doc, _ in analysis.docs.get(group, [])]
        if not runs:
            continue
        rows = analysis.timing[analysis.timing["group"] == group] if group != view.baseline else undecided
        share = (
            len(undecided[undecided["group"] == group]) / max(1, len(rows)) if group != view.baseline else 1
        )
        each = statistics.fmean(float(doc.get("duration_s") or 0.0) for doc in runs)
        seconds += max(0, target - len(runs)) * each * min(1.0, share)
    processes = max(0, target - have) * len(groups)
    count = f"The {len(undecided)} inconclusive or missing rows"
    cost = f"about {processes} more processes, {_duration(seconds)} at most from what these runs took"
    command = _qualify(view, sources, matrix)
    if command:
        rounds = (
            f"with `rounds: {target}` in the matrix (it asks {view.rounds})" if view.rounds < target else ""
        )
        return (
            f"{count} need more rounds: {markdown.code(command)} {rounds} measures only them again, up to "
            f"{target} rounds a side ({cost})."
        ).replace("  ", " ")
    return (
        f"{count} need more rounds: run each side again until it has {target} rounds, then compare ({cost})."
    )


def _reproduce(regressions: pd.DataFrame, sources: list[Path]) -> list[str]:
    """The repro command of each regression, the largest change first, broken into lines a reader (and a
    shell, at each backslash) takes whole."""
    ordered = regressions.assign(size=[stats.change_size(r) for r in regressions["ratio"]]).sort_values(
        "size", ascending=False
    )
    commands = []
    for r in ordered.head(REPROS).to_dict("records"):
        words = [
            "python -m harness repro",
            *(f"--results {shlex.quote(str(s))}" for s in sources),
            f"--workload {shlex.quote(str(r['workload']))} --dtype {shlex.quote(str(r['dtype']))}",
            f"--candidate {shlex.quote(str(r['group']))}",
        ]
        commands.append(" \\\n    ".join(words))
    return commands


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"

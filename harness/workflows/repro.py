"""``harness repro``: one report row as a standalone reproducer to hand upstream.

Writes, into its own folder: ``repro.py`` (torch and the standard library only; the suite's own build
and timer code carried verbatim, the row's workload, dtype, knobs and suite settings, and how each
side's environment is made), ``README.md`` (the row as the report judged it, both environments as the
results recorded them, how to run it) and, for docker cells, one Dockerfile per side that installs
the cell's torch and cuDNN and runs the script.

Each side runs the torch build its results recorded: where the sides' environments differ (a row across
torch builds, or Pythons), each side runs under the interpreter its result ran under, and each side's
process refuses another torch than its own.
"""

from __future__ import annotations

import ast
import difflib
import filecmp
import json
import os
import re
import shlex
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pandas as pd

from harness import jsonio, resources
from harness.backends.docker import dockerfile
from harness.errors import InputError, Problem, shown
from harness.plan.model import Cell, Plan
from harness.report.analysis import row_verdicts, stats
from harness.report.analysis.analyze import analyze
from harness.report.analysis.frames import knob_label
from harness.report.analysis.model import View
from harness.report.analysis.release_gate import Policy
from harness.report.analysis.row_verdicts import TimingRow
from harness.report.writers import markdown
from harness.results import documents
from harness.suite import precision
from harness.suite.catalog import CATALOG
from harness.suite.document import Measurement, ResultDocument
from harness.workflows.repro_script import ScriptRow, SideRecipe

SCRIPT = Path(__file__).resolve().parent / "repro_script.py"
SUITE_ROOT = resources.PACKAGE.parent  # the folder that holds the harness package
# what a result records that lands in repro.py and is run or compared there, each checked whole
TORCH_VERSION = re.compile(r"[0-9][0-9A-Za-z.+_-]{0,99}")  # 2.13.0+cu130, 2.6.0a0+ecf3bae40a.nv25.01
TORCH_GIT = re.compile(r"[0-9A-Za-z]{1,64}")
INTERPRETER = re.compile(r"(/[A-Za-z0-9_.+@-]+)*/python[0-9.]*t?")  # an absolute path to a python


@dataclass(frozen=True)
class Written:
    folder: Path
    files: tuple[Path, ...]
    title: str
    notes: tuple[str, ...] = ()  # what whoever runs it here must know first (a side's Python not here)


@dataclass(frozen=True)
class RowAsked:
    """Which report row to reproduce: its workload and dtype, and where the report has several such rows,
    the candidate cell and the knobs that pick one."""

    workload: str
    dtype: str
    candidate: str | None = None
    knobs: str | None = None


def write(
    plan: Plan,
    dirs: list[Path],
    asked: RowAsked,
    out: Path,
    policy: Policy,
    options: dockerfile.BuildOptions | None = None,
) -> Written:
    """The reproducer of the ``asked`` row into ``out``."""
    loaded = documents.load_many(dirs)
    view = View.from_plan(plan).on(documents.devices(loaded))
    analysis = analyze(view, loaded, policy)
    row = _the_row(analysis.timing, view, asked.workload, asked.dtype, asked.candidate, asked.knobs)
    cells = {c.id: c for c in plan.cells}
    groups = {"baseline": view.baseline, "candidate": str(row["group"])}
    docs = {side: _first_ok(analysis.docs.get(group, []), group) for side, group in groups.items()}
    script_row = _script_row(plan, view, row, {side: cells[group] for side, group in groups.items()}, docs)
    backend = script_row["backend"]
    out.mkdir(parents=True, exist_ok=True)
    files = [_write_script(out / "repro.py", script_row, _sources(asked.workload))]
    if backend == "docker":
        for side, group in groups.items():
            files += _write_dockerfile(out, cells[group], side, options or dockerfile.BuildOptions())
    readme = out / "README.md"
    jsonio.write_text_atomic(readme, _readme(row, script_row, docs, view))
    files.append(readme)
    return Written(out, tuple(files), script_row["title"], _not_here(script_row))


def _script_row(
    plan: Plan, view: View, row: TimingRow, cells: dict[str, Cell], docs: dict[str, ResultDocument]
) -> ScriptRow:
    """What repro.py is filled in with: the row, how the suite measured it, and each side's environment;
    refused where a side's torch (or, across environments, its Python) is not recorded."""
    ratio = row["ratio"]
    assert ratio is not None  # the row was chosen for its finite ratio
    measurement = _measurement(docs["baseline"], row)
    knobs = {name: bool(on) for name, on in measurement["knobs"].items()}
    mode = precision.label(row["dtype"], knobs.get("tf32", False))
    title = (
        f"{row['workload']} {mode} [{row['knobs']}]: {view.labels[cells['candidate'].id]} against "
        f"{view.labels[view.baseline]}: {row['verdict']}, ratio {ratio:.3f}"
    )
    backend = docs["baseline"]["run"]["backend"]
    sides = {side: _side(cells[side], docs[side], backend) for side in cells}
    own = _own_interpreters(sides)
    for side, recipe in sides.items():
        if own and backend == "local" and recipe["interpreter"] is None:
            why = (
                f"the {side} side ran another torch or Python than the other side, and its result records no "
                "interpreter repro.py may run it with (environment.python.executable, an absolute path to a "
                "python); run the cell again with this harness (harness run --fresh) to record one"
            )
            raise InputError([Problem(cells[side].id, "results", why)])
    return {
        "title": title,
        "backend": backend,
        "own_interpreters": own,
        "workload": row["workload"],
        "family": CATALOG[row["workload"]].family,
        "dtype": row["dtype"],
        "knobs": knobs,
        "device": docs["baseline"]["device"],
        "profile": docs["baseline"]["profile"],
        "time_budget_s": float(plan.suite.time_budget_s),
        "min_time_s": float(plan.suite.min_time_s),
        "report_ratio": ratio,
        "sides": sides,
    }


def _the_row(
    timing: pd.DataFrame, view: View, workload: str, dtype: str, candidate: str | None, knobs: str | None
) -> TimingRow:
    judged = timing[timing["verdict"].notna()] if not timing.empty else timing
    rows = [
        r
        for r in row_verdicts.records(judged)
        if r["workload"] == workload
        and r["dtype"] == dtype
        and (knobs is None or r["knobs"] == knobs)
        and (candidate is None or candidate in f"{r['group']} {view.labels.get(str(r['group']), '')}")
        and stats.finite(r.get("ratio"))
    ]
    if len(rows) == 1:
        return rows[0]
    if rows:
        setting = "candidate"
        why = "matches several rows; name one by its candidate (a cell id) and its knobs: " + "; ".join(
            f"{r['group']} [{r['knobs']}]" for r in rows[:20]
        )
    else:
        have = [r for r in row_verdicts.records(judged) if stats.finite(r.get("ratio"))]
        setting, nearest = _nearest(have, view, workload, dtype, candidate, knobs)
        why = "matches no row with a ratio; " + nearest
    raise InputError([Problem(setting, f"{workload} {dtype}", why, setting=setting)])


def _nearest(
    have: list[TimingRow],
    view: View,
    workload: str,
    dtype: str,
    candidate: str | None,
    knobs: str | None,
) -> tuple[str, str]:
    """The first part of the asked row that no row has (the setting that asked it), and the nearest value
    the rows left have for it."""
    if not have:
        return "workload", "the results hold none (a row needs ok runs of its cell and of the baseline)"
    parts: tuple[tuple[Literal["workload", "dtype", "knobs"], str | None], ...] = (
        ("workload", workload),
        ("dtype", dtype),
        ("knobs", knobs),
    )
    for part, asked in parts:
        values = sorted({str(r[part]) for r in have})
        if asked is not None and asked not in values:
            return part, _meant(asked, values)
        have = [r for r in have if asked is None or r[part] == asked]
    names = {str(r["group"]): view.labels.get(str(r["group"]), "") for r in have}
    words = {w for g, label in names.items() for w in (g, label, *g.split("_"), *label.split())}
    shown = [f"{g} ({label})" for g, label in sorted(names.items())]
    return "candidate", _meant(str(candidate), sorted(words - {""}), shown)


def _meant(asked: str, values: list[str], shown: list[str] | None = None) -> str:
    close = difflib.get_close_matches(asked, values, n=1)
    if close:
        return f"did you mean {shlex.quote(close[0])}?"
    listed = shown or values
    more = f" and {len(listed) - 10} more" if len(listed) > 10 else ""
    return f"none has {shlex.quote(asked)}; the rows have: {', '.join(listed[:10])}{more}"


def _first_ok(entries: list[tuple[ResultDocument, str]], group: str) -> ResultDocument:
    for doc, _ in entries:
        if doc["status"] == "ok":
            return doc
    raise InputError([Problem(group, "results", "has no completed run to describe its environment")])


def _measurement(doc: ResultDocument, row: TimingRow) -> Measurement:
    for m in doc["measurements"]:
        if (m["workload"], m["dtype"], knob_label(m["knobs"])) == (
            row["workload"],
            row["dtype"],
            row["knobs"],
        ):
            return m
    raise InputError([Problem(row["workload"], "results", "the baseline has no such measurement")])


def _side(cell: Cell, doc: ResultDocument, backend: str) -> SideRecipe:
    cudnn = doc["cudnn"]
    env = doc.get("environment")
    if not env:
        why = "its result records no environment: no torch build for repro.py to check each side against"
        raise InputError([Problem(cell.id, "results", why)])
    torch, git = env["torch"]["version"], env["torch"].get("git_version")
    if not isinstance(torch, str) or not TORCH_VERSION.fullmatch(torch):
        why = f"{shown(torch)} is no torch version"
        raise InputError([Problem(cell.id, "environment.torch.version", why)])
    if git is not None and not (isinstance(git, str) and TORCH_GIT.fullmatch(git)):
        why = f"{shown(git)} is no git hash"
        raise InputError([Problem(cell.id, "environment.torch.git_version", why)])
    gpu = env["gpu"] or {}
    lib_dir = None
    if backend == "local" and cell.cudnn.kind in ("system", "wheel"):  # loaded through a shadow
        lib_dir = next(iter(cudnn.get("loaded_dirs") or []), None)
    venv = doc["run"].get("environment", {}).get("path")
    return {
        "cell": cell.id,
        "label": cell.label,
        "cudnn_enabled": cudnn["enabled"],
        "cudnn_lib_dir": lib_dir,
        "torch": torch,
        "torch_git": git,
        "interpreter": _interpreter(env["python"].get("executable")),
        "environment": venv if isinstance(venv, str) else None,
        "install": _install(cell.torch),
        "cuda": env["torch"].get("cuda"),
        "cudnn_runtime": cudnn["runtime_version"],
        "cudnn_built_for": cudnn["compile_version"],
        "cudnn_libraries": cudnn["loaded_libraries"],
        "compat_check_overridden": cudnn.get("compat_check_overridden", False),
        "gpu": gpu.get("name"),
        "driver": gpu.get("driver_version"),
        "python": env["python"]["version"],
    }


def _interpreter(recorded: object) -> str | None:
    """The Python a result ran under, where it is one repro.py may run: an absolute, normalized path to a
    ``python`` (results are untrusted; this one is executed)."""
    if not isinstance(recorded, str) or not INTERPRETER.fullmatch(recorded):
        return None
    return recorded if os.path.normpath(recorded) == recorded else None


def _install(torch: str) -> str | None:
    """What pip installs a cell's torch build from (PyTorch's index for a +VARIANT, else PyPI's); None for
    a cell that took the torch it found."""
    if torch in ("installed", "image"):
        return None
    variant = torch.partition("+")[2]
    if not variant:
        return f"torch=={torch}"
    index = dockerfile.INDEX_URL.format(variant=variant)
    return f"torch=={torch} --index-url {index} --extra-index-url {dockerfile.PYPI_URL}"


def _own_interpreters(sides: dict[str, SideRecipe]) -> bool:
    """Whether the sides ran in other environments (a torch build, its git hash, a Python, an interpreter):
    then each side runs under its own."""
    keys: tuple[Literal["torch", "torch_git", "python", "interpreter"], ...] = (
        "torch",
        "torch_git",
        "python",
        "interpreter",
    )
    baseline, candidate = sides.values()
    return any(baseline[key] != candidate[key] for key in keys)


def _not_here(row: ScriptRow) -> tuple[str, ...]:
    """For a local row across environments: each side whose Python is not on this machine, as repro.py
    will refuse it until it is given one."""
    if not row["own_interpreters"] or row["backend"] != "local":
        return ()
    notes = []
    for side, recipe in row["sides"].items():
        python = recipe["interpreter"]
        if python is None or not (os.path.isfile(python) and os.access(python, os.X_OK)):
            notes.append(
                f"the {side} side's Python, {python} (torch {recipe['torch']}), is not on this machine: "
                f"repro.py refuses to run until it is named, --python {side}=PATH (a Python with that torch)"
            )
    return tuple(notes)


def _sources(workload: str) -> dict[str, str]:
    """The family's module and every harness.suite module it and repro.py import (at the top or inside a
    function, as tensors.apply_knobs imports precision), verbatim."""
    todo = [f"harness.suite.workloads.{CATALOG[workload].family}", *_suite_imports(SCRIPT.read_text())]
    found: dict[str, str] = {}
    while todo:
        name = todo.pop()
        path = SUITE_ROOT / (name.replace(".", "/") + ".py")
        key = str(path.relative_to(SUITE_ROOT))
        if key not in found:
            found[key] = path.read_text()
            todo += _suite_imports(found[key])
    return dict(sorted(found.items()))


def _suite_imports(source: str) -> list[str]:
    """The harness.suite modules ``source`` imports anywhere in it: ``import harness.suite.x``, ``from
    harness.suite.x import y`` and ``from harness.suite import x`` (x a module)."""
    names: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names += [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
    return [
        name
        for name in names
        if name.startswith("harness.suite.") and (SUITE_ROOT / (name.replace(".", "/") + ".py")).is_file()
    ]


def _write_script(path: Path, row: ScriptRow, sources: dict[str, str]) -> Path:
    text = SCRIPT.read_text()
    text = text.replace(
        '"""Reproducer of one row of a cudnn-harness report (the template `harness repro` fills in).',
        f'"""Reproducer: {_docstring_safe(row["title"])}',
        1,
    )
    text = text.replace(
        'ROW: ScriptRow = json.loads("{}")  # filled in',
        f"ROW: ScriptRow = json.loads({json.dumps(json.dumps(row, indent=1))})  # filled in",
        1,
    )
    text = text.replace(
        "SOURCES: dict[str, str] = {}  # filled in", f"SOURCES: dict[str, str] = {sources!r}  #", 1
    )
    jsonio.write_text_atomic(path, text)
    path.chmod(jsonio.FILE_MODE | (jsonio.FILE_MODE & 0o444) >> 2)  # runnable where readable, per the umask
    return path


def _write_dockerfile(out: Path, cell: Cell, side: str, options: dockerfile.BuildOptions) -> list[Path]:
    """``<side>.Dockerfile``: the cell's image with repro.py in place of the suite; ``out`` is its whole
    build context, so what the build reads from here (a wheelhouse, a CA bundle) is copied in."""
    if cell.torch == "image":
        raise InputError(
            [Problem(cell.id, "torch", "holds torch in its base image: run repro.py in that image yourself")]
        )
    rendered = dockerfile.render(cell, options, final="repro", extra={"side": side})
    path = out / f"{side}.Dockerfile"
    jsonio.write_text_atomic(path, rendered.dockerfile)
    copied = []
    for name, source in rendered.context.items():
        if _copied(source, out, name):
            copied.append(out / name)
    return [path, *copied]


def _copied(source: Path, out: Path, name: str) -> bool:
    """``source`` copied to ``out``/``name`` (e.g. ``wheelhouse/x.whl``) unless the same bytes are there
    already (the other side's copy); whether it was. Each folder on the way is lstat-checked and the file
    opened with O_NOFOLLOW: a link planted in the reproducer's folder is refused, never written through."""
    where = out
    for part in Path(name).parent.parts:
        where = jsonio.real_folder(where / part)
    target = where / Path(name).name
    if (
        os.path.lexists(target)
        and stat.S_ISREG(os.lstat(target).st_mode)
        and filecmp.cmp(source, target, shallow=False)
    ):
        return False
    with source.open("rb") as read, jsonio.open_for_writing(target, "wb") as written:
        shutil.copyfileobj(read, written)
    return True


# how the row's own samples were timed (a result's ``timer``), as the README says it
TIMERS = {
    "perf_counter": "each sample the host's clock (time.perf_counter) around a call on the CPU",
    "cuda_graph": (
        "each sample CUDA events around a CUDA-graph replay of the call after an L2 flush, behind a "
        "calibrated GPU sleep that hides its launch"
    ),
    "cuda_event": (
        "each sample CUDA events around the call itself (no graph) after an L2 flush, behind a calibrated "
        "GPU sleep that hides its launch"
    ),
}


def _judged(row: TimingRow) -> str:
    """The row's interval, test and rounds, as its report judged it."""
    level, test = row.get("interval_level") or 0.99, row.get("test")
    how = {
        "welch-tost": "Welch's t on the logs of the round medians (the ratio of their geometric means)",
        "mann-whitney": "the Mann-Whitney U test on the round medians (the ratio of their medians)",
        "samples": "one process a side: its samples (no verdict)",
    }.get(str(test), "the round medians")
    return (
        f"{level:.1%} interval [{row['ci_low']:.3f}, {row['ci_high']:.3f}], p = {row['p_value']:.2g}, "
        f"{row['rounds_baseline']}+{row['rounds_candidate']} rounds judged by {how}"
    )


def _readme(row: TimingRow, script_row: ScriptRow, docs: dict[str, ResultDocument], view: View) -> str:
    text, code = markdown.inline, markdown.code  # what results hold is shown: it never makes Markdown
    knobs = script_row["knobs"]
    mode = precision.label(script_row["dtype"], knobs.get("tf32", False))  # never a bare "fp32"
    lines = [
        f"# {text(script_row['title'])}",
        "",
        f"From the report of matrix {code(view.name)}: {row['verdict']}, time ratio (candidate / baseline) "
        f"{script_row['report_ratio']:.3f}, {_judged(row)}"
        + (f"; what ran: {text(ran)}" if isinstance(ran := row.get("what_ran"), str) else "")
        + (f" ({text(change)})" if isinstance(change := row.get("ran_change"), str) else "")
        + ".",
        "",
        f"Workload {code(script_row['workload'])} ({CATALOG[script_row['workload']].description}), dtype "
        f"{code(script_row['dtype'])}: {text(mode)}, "
        f"knobs {text(json.dumps(knobs))}, profile "
        f"{code(str(script_row['profile']))} on {text(str(script_row['device']))}; shapes "
        f"{text(json.dumps(_measurement(docs['baseline'], row).get('params')))}; "
        f"inputs from fixed seeds; {TIMERS.get(str(row.get('timer_baseline')), TIMERS['cuda_event'])}, "
        f"with a time budget of {script_row['time_budget_s']:g} s a row (sampling stops at it, or once "
        f"{script_row['min_time_s']:g} s of timed work is in and the samples agree) "
        "(harness/suite/timing/measure.py, carried verbatim in repro.py).",
        "",
        "## The two environments, as the results recorded them",
        "",
    ]
    sides = script_row["sides"]
    lines += ["| | baseline | candidate |", "|---|---|---|"]
    for key in sides["baseline"]:
        values = [_cell(sides[side].get(key)) for side in ("baseline", "candidate")]
        lines.append(f"| {_cell(key.replace('_', ' '))} | {values[0]} | {values[1]} |")
    lines += ["", "## Which torch each side runs", "", *_which_torch(script_row), "", "## Run it", ""]
    if script_row["backend"] == "docker":
        lines += [
            "```sh",
            "for side in baseline candidate; do docker build -f $side.Dockerfile -t repro-$side . ; done",
            "for i in 1 2 3 4 5 6 7; do for side in baseline candidate; do",
            "  docker run --rm --gpus all repro-$side >> $side.jsonl; done; done",
            "python3 repro.py --ratio baseline.jsonl candidate.jsonl",
            "```",
        ]
    else:
        lines += [
            "```sh",
            "python3 repro.py --rounds 7   # both sides, interleaved processes, on this machine",
            "```",
            "",
            "`--one --side NAME` measures one process of one side.",
        ]
        lines += [
            f"The {side}'s cuDNN comes in through a shadow of its site-packages built by the script from the "
            f"library directory above (`cudnn_lib_dir`), as the harness loaded it."
            for side, recipe in sides.items()
            if recipe["cudnn_lib_dir"]
        ]
    return "\n".join(lines) + "\n"


def _which_torch(row: ScriptRow) -> list[str]:
    """What the README says of each side's torch: where it comes from, and that each side checks it."""
    text, code = markdown.inline, markdown.code
    sides = row["sides"]
    builds = {side: f"torch {text(recipe['torch'])}" for side, recipe in sides.items()}
    check = (
        "Each side's process first checks that the torch it imported is the build its result recorded (the "
        "version and, where recorded, the git hash) and refuses (exit 2), naming both, where it is not."
    )
    if row["backend"] == "docker":
        made = "; ".join(f"`{side}.Dockerfile` installs {builds[side]}" for side in sides)
        return [
            f"Each side runs in its own image, with that image's Python and torch: {made}. {check} "
            "`--ratio` checks that each file holds its side's lines, each with its side's torch."
        ]
    if not row["own_interpreters"]:
        return [
            f"Both sides recorded the same environment ({builds['baseline']}): both run under the Python "
            f"that runs repro.py, whose torch must be that build. {check}"
        ]
    each = "; ".join(
        f"the {side} under {code(str(recipe['interpreter']))} ({builds[side]})"
        for side, recipe in sides.items()
    )
    return [
        "The sides ran in different environments, so each runs under its own Python, as its cell did: "
        f"{each}. Where one is not on this machine, make a Python with that build (the `install` row "
        f"above) and name it with `--python SIDE=PATH`. {check}"
    ]


def _cell(value: object) -> str:
    """A value as a table cell: a list one item a line."""
    return markdown.inline("\n".join(map(str, value)) if isinstance(value, list) else str(value), cell=True)


def _docstring_safe(text: str) -> str:
    """``text`` as the first line of repro.py's docstring: nothing that escapes (a backslash), ends the
    docstring (three double quotes), breaks the line or cannot be Python source at all (NUL)."""
    printable = "".join(c if c.isprintable() else " " for c in text)
    return printable.replace("\\", "/").replace('"""', "'''")

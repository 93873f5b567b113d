"""Load and check ``matrix.yaml``; expand it into Cells and a Plan (``model``).

What a backend can realize is the backend's to say: the caller passes its rules (``cell_rules``, the
backends registry's), so this module knows no backend.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import itertools
import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict, cast

from harness import schemas
from harness.errors import InputError, Problem, bounded
from harness.plan import yamlfile
from harness.plan.axes import AXES, NEWEST, CudnnSource, SourceTerms, cudnn_entry
from harness.plan.model import (
    DEFAULT_ALPHA,
    DEFAULT_REGRESSION_PCT,
    DEFAULT_ROUNDS,
    ELSEWHERE,
    KNOBS,
    Cell,
    CellProblem,
    Chosen,
    DockerSection,
    Host,
    LeftOut,
    Plan,
    SlurmSection,
    checked_section,
)
from harness.suite.settings import SuiteSettings

# A matrix is expanded in memory before rules apply; 10^6 cells took a minute and 1.4 GB. 1024 cells is
# already more GPU time than any qualification we run (each cell is an image and rounds of the suite).
MAX_CELLS = 1024
CellRules = Callable[[str, Sequence[Cell]], list[CellProblem]]
AxisValue = str | dict[str, Any]  # an axis value as a matrix writes it (``axes.AXES``: how each reads)
Terms = dict[CudnnSource, tuple[int, SourceTerms]]  # each cuDNN source of the axis: its entry's index, terms
DEVICES = {"cuda": "a GPU", "cpu": "the CPU"}
TOLD = 1500  # characters of why a cell is left out, or how it was chosen (plan.json holds up to 2000)


class Rules(TypedDict, total=False):
    exclude: list[dict[str, AxisValue]]  # selectors: a cell matching one is left out
    include: list[dict[str, AxisValue]]  # cells added to the axes' product


class ThresholdsSection(TypedDict, total=False):
    """A matrix's ``thresholds:`` (plan.json holds every one, with its default)."""

    regression_pct: float
    per_workload: dict[str, float]
    alpha: float
    cpu_regression_pct: float


class MatrixDocument(TypedDict, total=False):
    """``matrix.yaml`` as its schema checked it (``schemas/matrix.schema.json``)."""

    name: str
    backend: str
    axes: dict[str, list[AxisValue]]
    rules: Rules
    baseline: dict[str, AxisValue]
    knobs: dict[str, list[bool]]
    suite: dict[str, Any]  # SuiteSettings.from_json reads it
    thresholds: ThresholdsSection
    rounds: int
    slurm: SlurmSection
    docker: DockerSection


@dataclass(frozen=True)
class Made:
    """What a host makes of a matrix's cells: the cells it runs, those it leaves out and why, and how it
    chose what a conditional source became."""

    cells: list[Cell]
    left_out: list[LeftOut]
    chosen: list[Chosen]


def load(
    path: Path,
    known_workloads: Iterable[str] | None = None,
    cell_rules: CellRules | None = None,
    backend: str | None = None,
    host: Host | None = None,
) -> Plan:
    """Read, validate and expand a matrix file. Raises InputError listing every problem found.

    ``cell_rules``: what the backend that will run the cells cannot realize (``backends.registry``);
    ``backend``: that backend, where the command line overrides the matrix's; ``host``: what this machine
    makes of the cuDNN sources a ``device`` or ``optional`` term or ``{wheel: newest}`` leaves to it (a
    matrix that has one needs it).
    """
    data, line_of = yamlfile.load(path)
    source = str(path)
    found = schemas.problems("matrix", data, source, line_of)
    if not isinstance(data, dict) or any(p.field == "" for p in found):  # nothing more can be read safely
        raise InputError(found)
    document = cast(MatrixDocument, data)  # what the schema checked; each part read below only if sound
    matrix = _Matrix(document, source, line_of, found)
    product = (
        _cells(document, matrix.problem, found) if "axes" in data and matrix.sound("axes", "rules") else None
    )
    made = None
    if product is not None:
        matrix.check_cells(product[0], cell_rules, backend)
        made = matrix.resolve(*product, host)
        matrix.check_baseline(made)
    if known_workloads is not None:
        matrix.check_workloads(set(known_workloads))
    if found:
        found = sorted(found, key=lambda p: p.line or 0)
        if len(found) > schemas.MAX_PROBLEMS:  # a hostile matrix's thousand faults are told as the first few
            more = Problem(source, "", f"and {len(found) - schemas.MAX_PROBLEMS} more problems, not listed")
            found = [*found[: schemas.MAX_PROBLEMS], more]
        raise InputError(found)
    assert made is not None  # no problem: the axes and rules were sound
    return _plan(document, made, backend or document.get("backend", "local"), path)


@dataclass
class _Matrix:
    """A matrix being checked: its data, where each value stands, and the problems found so far (which
    grow as the checks go)."""

    data: MatrixDocument
    source: str
    line_of: yamlfile.Locator
    found: list[Problem]

    def sound(self, *parts: str) -> bool:
        """Whether the later checks may read these parts ("axes", "suite.workloads"): no schema problem
        in them or in what holds them. A problem elsewhere is told with theirs, so that a matrix's every
        independent mistake is reported in one pass."""
        return not any(
            bad == part or bad.startswith((f"{part}.", f"{part}[")) or part.startswith(f"{bad}.")
            for part in parts
            for bad in (p.field for p in self.found)
        )

    def problem(self, json_path: list[Any], message: str) -> Problem:
        return Problem(self.source, schemas.field_name(json_path), message, self.line_of(json_path))

    def check_cells(self, cells: list[Cell], cell_rules: CellRules | None, backend: str | None) -> None:
        """What the backend cannot realize of the axes' product (a cell a term may leave out included: on
        another host it is made)."""
        data, found = self.data, self.found
        if backend or self.sound("backend"):
            for unrealizable in (
                cell_rules(backend or data.get("backend", "local"), cells) if cell_rules else ()
            ):
                where: list[Any] = ["axes", unrealizable.axis] if unrealizable.axis else ["axes"]
                found.append(self.problem(where, unrealizable.message))

    def check_baseline(self, made: Made) -> None:
        """A baseline that is not exactly one of the cells this host makes: it may match one left out."""
        data = self.data
        if "baseline" not in data or not self.sound("baseline"):
            return
        baseline = [c for c in made.cells if c.matches(data["baseline"])]
        if len(baseline) == 1:
            return
        left = [left for left in made.left_out if left.cell.matches(data["baseline"])]
        if not baseline and left:
            message = (
                f"matches {left[0].cell.label}, which this host leaves out ({left[0].why}); the baseline "
                "must be a cell wherever the matrix runs: give its cuDNN source no device or optional term"
            )
        else:
            which = ", ".join(c.id for c in baseline[:5]) if baseline else "none"
            which += f" and {len(baseline) - 5} more" if len(baseline) > 5 else ""
            message = f"must match exactly one cell; matches {which}; {_narrowed(baseline)}"
        self.found.append(self.problem(["baseline"], message))

    def resolve(self, cells: list[Cell], terms: Terms, host: Host | None) -> Made:
        """The cells ``host`` makes of the product: a source with a ``device`` term only where the suite runs
        on that device, an ``optional`` one only where the host can make it (else left out, with why),
        ``{wheel: newest}`` as the release it is. A source that must be made and cannot is a problem."""
        device = str(self.data.get("suite", {}).get("device", "auto")) if self.sound("suite") else "auto"
        made = Made([], [], [])
        for cell in cells:
            index, term = terms.get(cell.cudnn, (-1, SourceTerms()))
            if not term.conditional and cell.cudnn.value != NEWEST:
                made.cells.append(cell)
                continue
            if host is None:
                why = "needs the host that runs the matrix to decide it (plan it through the command line)"
                self.found.append(self.problem(["axes", "cudnn", index], why))
                continue
            elsewhere = _elsewhere(cell, term, device, host)
            if elsewhere:
                made.left_out.append(LeftOut(cell, elsewhere))
                continue
            if not term.optional and cell.cudnn.value != NEWEST:  # a device term alone: made as written
                made.cells.append(cell)
                continue
            try:
                source, how = host.source(cell)
            except LookupError as exc:
                if term.optional:
                    made.left_out.append(LeftOut(cell, bounded(str(exc), TOLD)))
                else:
                    fix = "mark it optional: true to leave it out where it cannot be made, or name a release"
                    message = f"{cell.cudnn.words} for torch {cell.torch}: {exc}; {fix}"
                    self.found.append(self.problem(["axes", "cudnn", index], message))
                continue
            chosen = dataclasses.replace(cell, cudnn=source)
            if chosen in made.cells or (chosen != cell and chosen in cells):
                made.left_out.append(LeftOut(cell, f"it is {source.label} ({how}), already a cell"))
                continue
            made.cells.append(chosen)
            made.chosen.append(Chosen(chosen.id, cell.cudnn, bounded(how, TOLD)))
        return made

    def check_workloads(self, known: set[str]) -> None:
        """Every workload the suite settings and the thresholds name is one the suite knows."""
        suite, found = self.data.get("suite", {}), self.found
        see = "see 'python -m harness.suite list'"
        if self.sound("suite.workloads"):
            for i, name in enumerate(suite.get("workloads", [])):
                if name not in known:
                    found.append(
                        self.problem(
                            ["suite", "workloads", i],
                            f"unknown workload {name!r}; {_meant(name, known)}known: "
                            + ", ".join(sorted(known)),
                        )
                    )
        for key in ("rows", "cpu_rows"):
            if self.sound(f"suite.{key}"):
                for i, row in enumerate(suite.get(key, [])):
                    name = row.rsplit(":", 1)[0]
                    if name not in known:
                        message = f"unknown workload {name!r} in {row!r}; {_meant(name, known)}{see}"
                        found.append(self.problem(["suite", key, i], message))
        if self.sound("thresholds.per_workload"):
            for name in self.data.get("thresholds", {}).get("per_workload", {}):
                if name not in known:
                    message = f"unknown workload {name!r}; {_meant(name, known)}{see}"
                    found.append(self.problem(["thresholds", "per_workload", name], message))


def _elsewhere(cell: Cell, term: SourceTerms, device: str, host: Host) -> str | None:
    """Why a cell whose source names a device is left out here (None: the suite runs on that device)."""
    if term.device is None:
        return None
    where, why = (device, f"suite.device is {device}") if device != "auto" else host.device(cell)
    if where == term.device:
        return None
    return (
        f"{ELSEWHERE}{DEVICES[term.device]} (device: {term.device}); here it runs on "
        f"{DEVICES.get(where, where)}: {why}"
    )


def _plan(data: MatrixDocument, made: Made, backend: str, path: Path) -> Plan:
    """The plan of a matrix found sound."""
    cells = made.cells
    thresholds = data.get("thresholds", {})
    knobs = data.get("knobs", {})
    knob_sets = tuple(
        dict(zip(KNOBS, values, strict=True))
        for values in itertools.product(*(knobs.get(k, [False]) for k in KNOBS))
    )
    return Plan(
        name=data["name"],
        backend=backend,
        cells=tuple(cells),
        baseline_id=next(c.id for c in cells if c.matches(data["baseline"])),
        knob_sets=knob_sets,
        suite=SuiteSettings.from_json(data.get("suite", {})),
        regression_pct=float(thresholds.get("regression_pct", DEFAULT_REGRESSION_PCT)),
        per_workload_pct={k: float(v) for k, v in thresholds.get("per_workload", {}).items()},
        matrix_sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
        source=str(path),
        rounds=int(data.get("rounds", DEFAULT_ROUNDS)),
        alpha=float(thresholds.get("alpha", DEFAULT_ALPHA)),
        cpu_regression_pct=float(thresholds["cpu_regression_pct"])
        if "cpu_regression_pct" in thresholds
        else None,
        slurm=checked_section(data, "slurm"),
        docker=checked_section(data, "docker"),
        left_out=tuple(made.left_out),
        chosen=tuple(made.chosen),
    )


def _cells(
    data: MatrixDocument, problem: Callable[[list[Any], str], Problem], found: list[Problem]
) -> tuple[list[Cell], Terms] | None:
    """The axes' product with the rules applied, and each cuDNN source's terms; None where it would be
    too large to make (said in ``found``, as is every rule that does nothing)."""
    axes: dict[str, list[Any]] = {a.name: data["axes"].get(a.name, [a.default]) for a in AXES}
    terms: Terms = {}
    for i, entry in enumerate(axes["cudnn"]):
        source, term = cudnn_entry(entry)
        if source in terms:
            first = f"axes.cudnn[{terms[source][0]}]"
            found.append(
                problem(["axes", "cudnn", i], f"{source.label} is {first} again; list a source once")
            )
        terms.setdefault(source, (i, term))
    axes["cudnn"] = [source.to_json() for source in terms]
    expanded = math.prod(len(values) for values in axes.values())
    if expanded > MAX_CELLS:
        sizes = " x ".join(f"{len(values)} {axis}" for axis, values in axes.items())
        found.append(
            problem(
                ["axes"],
                f"expands to {expanded} cells ({sizes}); at most {MAX_CELLS}: split "
                "the matrix into several, or list fewer values per axis",
            )
        )
        return None
    cells = [
        Cell.from_json(dict(zip(axes, values, strict=True))) for values in itertools.product(*axes.values())
    ]
    rules = data.get("rules", {})
    for i, selector in enumerate(rules.get("exclude", [])):
        kept = [c for c in cells if not c.matches(selector)]
        if len(kept) == len(cells):
            found.append(problem(["rules", "exclude", i], "matches no cell; fix or remove this rule"))
        cells = kept
    for i, raw in enumerate(rules.get("include", [])):
        extra = Cell.from_json(raw)
        if extra in cells:
            found.append(
                problem(["rules", "include", i], "is already a cell of the matrix; remove this rule")
            )
        else:
            cells.append(extra)
    if not cells:
        found.append(problem(["rules"], "the rules leave no cell to run"))
    if len(cells) > MAX_CELLS:
        found.append(problem(["rules", "include"], f"the matrix has {len(cells)} cells; at most {MAX_CELLS}"))
    return cells, terms


def _narrowed(matched: list[Cell]) -> str:
    """The fix for a baseline that matches more than one cell, or none: the axes to add to it."""
    if not matched:
        return "name values the axes list (each of baseline's keys is an axis; its value one of that axis's)"
    docs = [c.to_json() for c in matched]
    differ = [k for k in docs[0] if len({json.dumps(d.get(k), sort_keys=True) for d in docs}) > 1]
    first = ", ".join(f"{k}: {json.dumps(docs[0][k])}" for k in differ)
    return f"add {' and '.join(differ)} to it, e.g. baseline: {{..., {first}}}" if differ else ""


def _meant(name: str, known: set[str]) -> str:
    close = difflib.get_close_matches(name, sorted(known), n=1)
    return f"did you mean {close[0]!r}? " if close else ""

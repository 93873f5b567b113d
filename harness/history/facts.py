"""What the index keeps of one result document: the run (its cell, round, times), its context (what must
be equal for two runs to compare: the report's ``comparability_key``), its build (torch, cuDNN) and a line
per measurement (the row, its median and quartiles, what ran, and why a busy host spoiled it, if it did)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.plan.axes import CudnnSource
from harness.report.analysis.frames import (
    IMPLEMENTATION_PREFIXES,
    cell_label,
    comparability_key,
    knob_label,
    short_kernel,
)
from harness.results import validity
from harness.results.documents import round_of
from harness.suite.document import Measurement, ResultDocument

TEXT_LIMIT = 200  # what the index keeps of a free text (a kernel's name, a failure's reason)
_SURROGATE = re.compile("[\ud800-\udfff]")


def _t(value: object) -> str:
    """A free text as the index keeps it: cut, and a lone surrogate (JSON can hold one, UTF-8 cannot) the
    replacement character."""
    return _SURROGATE.sub("\ufffd", str(value)[:TEXT_LIMIT])


@dataclass(frozen=True)
class Context:
    """Runs compare only within one context (the rule ``report`` applies)."""

    gpu: str
    driver: str
    suite: str
    profile: str

    @property
    def label(self) -> str:
        return f"{self.gpu}, driver {self.driver}, suite {self.suite} ({self.profile})"


@dataclass(frozen=True)
class Row:
    """A row of every report: one workload at one dtype with one set of knobs."""

    workload: str
    dtype: str
    knobs: str  # as the report writes them: 'benchmark=0 deterministic=0 tf32=0'

    @property
    def slug(self) -> str:
        """A file name of the row's own: the workload's characters are [a-z0-9_.-] (the schema's)."""
        bits = "".join(part[0] + part.split("=")[1] for part in self.knobs.split())
        return f"{self.workload}.{self.dtype}.{bits}"


@dataclass(frozen=True)
class MeasurementFacts:
    row: Row
    status: str
    median_s: float | None
    q1_s: float | None
    q3_s: float | None
    n: int | None
    ran: str | None  # the largest kernel (else the implementation's operators), shortened
    spoiled: str | None = None  # why a busy or stalled host spoiled its timing (the report's rule)


@dataclass(frozen=True)
class Run:
    """A run as the index keeps it (a line of its runs table): its cell, round, times, outcome and build."""

    sha256: str
    cell_id: str
    cell_label: str
    round: int
    started_at: str
    finished_at: str
    status: str
    failure: str | None
    backend: str
    torch: str
    cudnn: str
    context: Context


@dataclass(frozen=True)
class RunFacts(Run):
    """A run to add to the index: the run, the file it came from and its measurements."""

    file: str  # relative to the history
    measurements: tuple[MeasurementFacts, ...]


def of(document: ResultDocument, sha256: str, file: str) -> RunFacts:
    """The facts of a valid document (``results.documents.check`` passed it)."""
    key = comparability_key(document)
    env = document.get("environment")
    failure, host = document["failure"], document.get("host")
    busy = f"the host was busy ({host['why']})" if host and host["busy"] else None
    return RunFacts(
        sha256=sha256,
        file=file,
        cell_id=document["cell"]["id"],
        cell_label=_t(cell_label(document["cell"])),
        round=round_of(document),
        started_at=validity.utc(document["started_at"]),  # one spelling: texts order as instants do
        finished_at=validity.utc(document["finished_at"]),
        status=document["status"],
        failure=_t(failure["reason"]) if failure else None,
        backend=document["run"]["backend"],
        torch=_t((env["torch"].get("version") if env else None) or "unknown"),
        cudnn=_t(cudnn_of(document)),
        context=Context(_t(key["device"]), _t(key["driver"]), key["suite version"], key["suite profile"]),
        measurements=tuple(_measurement(m, busy) for m in document["measurements"]),
    )


def cudnn_of(document: ResultDocument) -> str:
    """The cuDNN a run measured with: "disabled" where its cell turned cuDNN off (whatever was loaded),
    else the release it loaded, else (a CPU build of torch loads none) its cell's source, so a CPU's
    bundled and disabled cells stay apart."""
    asked = CudnnSource.from_json(document["cell"]["cudnn"])
    cudnn = document.get("cudnn")
    if asked.kind == "disabled":
        return "disabled"
    return (cudnn["runtime_version"] if cudnn else None) or asked.label


def _measurement(m: Measurement, busy: str | None) -> MeasurementFacts:
    stats = m.get("stats") if m["status"] == "ok" else None
    return MeasurementFacts(
        row=Row(m["workload"], m["dtype"], knob_label(m["knobs"])),
        status=m["status"],
        median_s=stats["median"] if stats else None,
        q1_s=stats["q1"] if stats else None,
        q3_s=stats["q3"] if stats else None,
        n=stats["n"] if stats else None,
        ran=_ran(m),
        spoiled=_t(m.get("stalled") or busy) if stats and (m.get("stalled") or busy) else None,
    )


def _ran(m: Measurement) -> str | None:
    ran = m.get("what_ran")
    if not ran:
        return None
    kernels = ran.get("kernels")
    if kernels:
        return _t(short_kernel(kernels[0]["name"]))
    names = [o["name"] for o in ran["operators"]]
    chosen = [n for n in names if n.startswith(IMPLEMENTATION_PREFIXES)] or names[:2]
    return _t(", ".join(chosen)) or None

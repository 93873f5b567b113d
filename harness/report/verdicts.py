"""The verdicts' names in one place, for the command line and the tests: each row against the baseline
(``row_verdicts``), what ran differently (``ran_changes``), the numerics (``numerics_verdicts``), the
release gate (``release_gate``) and verdict.json (``verdict_json``). The report's own modules import
those modules directly."""

from harness.report.numerics_verdicts import beyond_tolerance, numerics
from harness.report.ran_changes import change_kind
from harness.report.release_gate import OUTCOMES, Gate, Outcome, Policy, gate
from harness.report.row_verdicts import timing
from harness.report.verdict_json import VERDICT_SCHEMA_VERSION, document

__all__ = [
    "OUTCOMES",
    "VERDICT_SCHEMA_VERSION",
    "Gate",
    "Outcome",
    "Policy",
    "beyond_tolerance",
    "change_kind",
    "document",
    "gate",
    "numerics",
    "timing",
]

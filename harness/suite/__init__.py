"""The in-cell side: the fixed workload suite, its timing and the environment capture.

Runs inside the cell (a container, or a subprocess of a Python with torch). It imports only torch
and the standard library, and never the orchestrator side of ``harness``: the orchestrator talks to
it through ``python -m harness.suite`` and the JSON document that writes.
"""

SUITE_VERSION = "0.5"
RESULT_SCHEMA_VERSION = 1

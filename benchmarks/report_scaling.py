"""Does ``report`` (and ``compare``) take time linear in the number of measurements? (issue 31)

    python -m benchmarks.report_scaling [--sizes 1250 2500 5000 10000] [--keep DIR]

Builds results folders of 2 cells x 6 rounds from a committed CPU result, each document holding
``size / 12`` measurements (the result's own, renamed as distinct workloads), then times ``harness
report`` and ``harness compare`` on each in a subprocess. Linear time: the seconds per 1,000
measurements stay flat as the size doubles. A hostile folder of this size must not stall CI.
"""

from __future__ import annotations

import argparse
import copy
import datetime as dt
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import jsonio
from harness.results import folder

SOURCE = Path(__file__).resolve().parent.parent / "lab" / "evidence" / "site-cpu" / "quiet"
CELLS, ROUNDS = 2, 6  # rounds 4-6 are rounds 1-3 a day later: a document stays under the 64 MB read limit


def build(out: Path, measurements: int) -> Path:
    """A results folder of ``measurements`` measurements in all, with its plan."""
    plan = jsonio.read(SOURCE / folder.PLAN_FILE)
    plan["cells"] = plan["cells"][:CELLS]
    plan["baseline"] = plan["cells"][0]["id"]
    plan["suite"].pop("rows", None)
    plan["suite"]["workloads"] = plan["suite"].get("workloads") or ["relu"]
    plan["rounds"] = ROUNDS
    out.mkdir(parents=True)
    jsonio.write_atomic(out / folder.PLAN_FILE, plan)
    made_for = folder.plan_sha256(out)  # the grown documents are this plan's rounds, not the source's
    per_document = measurements // (CELLS * ROUNDS)
    for cell in plan["cells"]:
        for round_index in range(1, ROUNDS + 1):
            source = next(SOURCE.glob(f"{cell['id']}.r{(round_index - 1) % 3 + 1}.json*"))
            doc = jsonio.read(source)
            if round_index > 3:  # the same run a day later: another run, by its start and finish
                for key in ("started_at", "finished_at"):
                    when = dt.datetime.fromisoformat(doc[key]) + dt.timedelta(days=1)
                    doc[key] = when.isoformat()
                doc["run"]["round"] = round_index
            ok = [m for m in doc["measurements"] if m["status"] == "ok"]
            grown = []
            for i in range(per_document):
                m = copy.deepcopy(ok[i % len(ok)])
                m["workload"] = f"w{i:05d}"
                grown.append(m)
            doc["measurements"] = grown
            if "plan_sha256" in doc["run"]:
                doc["run"]["plan_sha256"] = made_for
            jsonio.write_atomic(folder.result_path(out, cell["id"], round_index), doc, compact=True)
    return out


def timed(*args: str) -> float:
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True)
    if done.returncode not in (0, 1):
        raise SystemExit(f"harness {args[0]} failed ({done.returncode}): {done.stderr[-2000:]}")
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1250, 2500, 5000, 10000])
    parser.add_argument("--keep", type=Path, help="build the folders here and keep them")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = args.keep or Path(scratch)
        print(f"{'measurements':>12} {'report s':>9} {'per 1k':>7} {'compare s':>10} {'per 1k':>7}")
        for size in args.sizes:
            results = build(root / f"results-{size}", size)
            report_s = timed("report", "--results", str(results), "--out", str(root / f"report-{size}"))
            cells = sorted(results.glob("*.json.gz"))
            side_a, side_b = root / f"a-{size}", root / f"b-{size}"
            for side, prefix in (
                (side_a, cells[0].name.split(".r")[0]),
                (side_b, cells[-1].name.split(".r")[0]),
            ):
                side.mkdir()
                for path in results.glob(f"{prefix}.r*.json.gz"):
                    (side / path.name).symlink_to(path)
            compare_s = timed("compare", str(side_a), str(side_b), "--format", "csv")
            print(
                f"{size:>12,} {report_s:>9.1f} {report_s / size * 1000:>7.2f} "
                f"{compare_s:>10.1f} {compare_s / size * 1000:>7.2f}",
                flush=True,
            )


if __name__ == "__main__":
    main()

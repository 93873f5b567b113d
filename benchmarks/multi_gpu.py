"""Cells per hour with one GPU busy and with every GPU busy, side by side, plus DDP scaling.

    python -m benchmarks.multi_gpu --gpus 0,1 [--matrix M] [--ddp-matrix D] [--out DIR]

Runs ``M`` twice through ``python -m harness run --fresh``: first with ``--gpus <first>`` (one run
at a time), then with ``--gpus <all of them>`` (one run per GPU at a time), timing each command as a
user would see it, and prints runs per hour for both and their ratio (target >= 1.9x on 2 GPUs). Then
runs ``D`` (a matrix naming the DDP workload) with every GPU and prints its scaling efficiency from
the results. It also compares the medians of the two ways of running, to show whether sharing the
host changed what was measured.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from harness import jsonio

ROOT = Path(__file__).resolve().parent.parent


def _run(matrix: Path, out: Path, gpus: str) -> float:
    command = [
        sys.executable,
        "-m",
        "harness",
        "run",
        "--matrix",
        str(matrix),
        "--out",
        str(out),
        "--gpus",
        gpus,
        "--fresh",
    ]
    print("$", " ".join(command), flush=True)
    start = time.monotonic()
    done = subprocess.run(command, cwd=ROOT)
    wall = time.monotonic() - start
    if done.returncode != 0:
        sys.exit(f"the run exited with {done.returncode}")
    return wall


def _documents(out: Path) -> list[dict]:
    return [jsonio.read(p) for p in sorted(out.glob("*.r*.json.gz"))]


def _medians(docs: list[dict]) -> dict[tuple[str, str, str, str], list[float]]:
    found: dict[tuple[str, str, str, str], list[float]] = {}
    for doc in docs:
        for m in doc["measurements"]:
            if m["status"] == "ok":
                key = (doc["cell"]["id"], m["workload"], m["dtype"], json.dumps(m["knobs"], sort_keys=True))
                found.setdefault(key, []).append(m["stats"]["median"])
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpus", required=True, help="GPU ids, e.g. 0,1")
    parser.add_argument("--matrix", type=Path, default=ROOT / "lab/evidence/gpu-multi/matrix.yaml")
    parser.add_argument("--ddp-matrix", type=Path, default=ROOT / "lab/evidence/gpu-multi/ddp-matrix.yaml")
    parser.add_argument("--out", type=Path, default=ROOT / "results/gpu-multi")
    args = parser.parse_args()
    gpus = args.gpus.split(",")
    one, many = args.out / "one-gpu", args.out / f"{len(gpus)}-gpus"
    wall_one = _run(args.matrix, one, gpus[0])
    wall_many = _run(args.matrix, many, ",".join(gpus))
    runs = len(_documents(one))
    ok = sum(d["status"] == "ok" for d in _documents(one) + _documents(many))
    per_hour_one, per_hour_many = runs / wall_one * 3600, runs / wall_many * 3600
    print(f"\n{runs} runs ({ok} of {2 * runs} ok over both ways)")
    print(f"1 GPU busy:  {wall_one:7.1f} s  {per_hour_one:6.1f} runs/hour")
    print(f"{len(gpus)} GPUs busy: {wall_many:7.1f} s  {per_hour_many:6.1f} runs/hour")
    ratio = per_hour_many / per_hour_one
    print(
        f"ratio {ratio:.2f}x (target >= {0.95 * len(gpus):.1f}x: "
        f"{'met' if ratio >= 0.95 * len(gpus) else 'NOT met'})"
    )
    a, b = _medians(_documents(one)), _medians(_documents(many))
    shifts = sorted(abs(statistics.median(b[k]) / statistics.median(a[k]) - 1) for k in a.keys() & b.keys())
    if shifts:
        p95 = shifts[min(len(shifts) - 1, round(0.95 * (len(shifts) - 1)))]
        print(
            f"medians, {len(gpus)} GPUs busy against 1 (per cell, median of rounds): |ratio - 1| p50 "
            f"{statistics.median(shifts):.3%}, p95 {p95:.3%}, max {shifts[-1]:.3%} over {len(shifts)}"
        )
    if args.ddp_matrix is None or not args.ddp_matrix.is_file():
        return
    ddp = args.out / "ddp"
    wall_ddp = _run(args.ddp_matrix, ddp, ",".join(gpus))
    print(f"\nDDP ({wall_ddp:.1f} s):")
    for doc in _documents(ddp):
        for m in doc["measurements"]:
            if m["status"] != "ok":
                print(
                    f"  {doc['run']['round']} {m['workload']} {m['dtype']}: {m['status']}: {m.get('error')}"
                )
                continue
            s = m["scaling"]
            steps = ", ".join(
                f"{w} GPU{'s' if w > 1 else ''} {t * 1e3:.2f} ms ({r:.0f} samples/s)"
                for w, t, r in zip(s["world_sizes"], s["median_step_s"], s["samples_per_s"], strict=True)
            )
            eff = f"{s['efficiency']:.3f}" if s["efficiency"] is not None else "n/a (one GPU)"
            print(f"  round {doc['run']['round']} {m['dtype']}: step {steps}; scaling efficiency {eff}")


if __name__ == "__main__":
    main()

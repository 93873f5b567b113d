"""Does ``report`` stay quick on a hostile folder, or a big one? (issue 42)

    python -m benchmarks.hostile_scale [--invalid 20000] [--measurements 15000] [--keep DIR]

Times ``harness report`` in a subprocess on two folders: one of ``--invalid`` small invalid files beside
a valid plan (each is quarantined; report then refuses the folder, exit 2), and one of ``--measurements``
measurements in all (``report_scaling.build``: 2 cells x 6 rounds from a committed CPU result). Prints the
seconds each took, and seconds per 1,000 files or measurements.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.report_scaling import SOURCE, build
from harness.results import folder


def invalid_folder(out: Path, count: int) -> Path:
    """``count`` small files that are not results (``{}``, and text that is no JSON), and a valid plan."""
    out.mkdir(parents=True)
    shutil.copy(SOURCE / folder.PLAN_FILE, out / folder.PLAN_FILE)
    for i in range(count):
        (out / f"planted-{i:06d}.json").write_text("{}" if i % 2 else "not json")
    return out


def timed(*args: str, expect: tuple[int, ...]) -> float:
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if done.returncode not in expect:
        raise SystemExit(f"harness {args[0]} exited {done.returncode}: {done.stderr[-2000:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--invalid", type=int, default=20000, help="small invalid files (0: skip)")
    parser.add_argument("--measurements", type=int, default=15000, help="measurements (0: skip)")
    parser.add_argument("--keep", type=Path, help="build the folders here and keep them")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = args.keep or Path(scratch)
        print(f"{'folder':>28} {'report s':>9} {'per 1k':>7}")
        if args.invalid:
            results = invalid_folder(root / f"invalid-{args.invalid}", args.invalid)
            seconds = timed(
                "report", "--results", str(results), "--out", str(root / "report-invalid"), expect=(2,)
            )
            label = f"{args.invalid:,} invalid files"
            print(f"{label:>28} {seconds:>9.1f} {seconds / args.invalid * 1000:>7.2f}", flush=True)
        if args.measurements:
            results = build(root / f"results-{args.measurements}", args.measurements)
            out = root / "report-measurements"
            seconds = timed("report", "--results", str(results), "--out", str(out), expect=(0, 1))
            label = f"{args.measurements:,} measurements"
            print(f"{label:>28} {seconds:>9.1f} {seconds / args.measurements * 1000:>7.2f}", flush=True)


if __name__ == "__main__":
    main()

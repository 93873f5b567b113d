"""Docker against local: the same cells measured in containers and in the machine's own Python.

    python -m lab.studies.backend_agreement DOCKER LOCAL [--verdicts NAME=VERDICTS.CSV ...] [--rerun RESULT]

DOCKER and LOCAL are results folders of the same cells (matched by cuDNN source: docker's
``{system: image}`` is the local ``{system: auto}``), run on one machine. It prints:

1. verdicts row by row: the docker report's beside each given ``verdicts.csv`` (other reports of the
   same rows), with every row whose verdict differs marked;
2. per-row medians docker/local (the median over rounds of each round's median) and |ratio - 1| at
   p50, p95 and max;
3. the container overhead per run: wall time around the suite minus the suite's own duration, for
   docker and local runs (runs that built their image are left out);
4. with ``--rerun``: that re-run result's medians against its original's, beside the spread between
   the original cell's own rounds (the A/A noise of one process against another).
"""

from __future__ import annotations

import argparse
import csv
import itertools
import statistics
import sys
from pathlib import Path

from harness import jsonio
from harness.results import documents
from harness.suite.document import ResultDocument

Row = tuple[str, str, str]  # cuDNN source, workload, dtype


def source_of(doc_or_group: ResultDocument | str) -> str:
    text = doc_or_group if isinstance(doc_or_group, str) else doc_or_group["cell"]["id"]
    for source in ("bundled", "system", "disabled", "wheel"):
        if f"cudnn-{source}" in text:
            return source
    return text


def medians(folder: Path) -> tuple[dict[Row, float], list[ResultDocument]]:
    """Median over rounds of each round's median, per row; and the documents."""
    docs = list(documents.load(folder).documents)
    per_row: dict[Row, list[float]] = {}
    for doc in docs:
        for m in doc["measurements"]:
            if m["status"] == "ok":
                row = (source_of(doc), m["workload"], m["dtype"])
                per_row.setdefault(row, []).append(m["stats"]["median"])
    return {row: statistics.median(values) for row, values in per_row.items()}, docs


def spread(ratios: list[float]) -> str:
    dev = sorted(abs(r - 1) * 100 for r in ratios)
    if not dev:
        return "no rows"
    p95 = dev[min(len(dev) - 1, round(0.95 * (len(dev) - 1)))]
    p50 = statistics.median(dev)
    return f"|ratio - 1| p50 {p50:.3f} %, p95 {p95:.3f} %, max {dev[-1]:.3f} % over {len(dev)}"


def verdict_rows(path: Path) -> dict[Row, tuple[str, float]]:
    with path.open() as f:
        return {
            (source_of(r["group"]), r["workload"], r["dtype"]): (r["verdict"], float(r["ratio"] or "nan"))
            for r in csv.DictReader(f)
        }


def overhead(docs: list[ResultDocument]) -> str:
    # a run that built its image has the build inside its wall time: the first round of a process
    kept = [d for d in docs if d["run"].get("image", {}).get("cached", True) or d["run"].get("round", 1) > 1]
    extra = [d["run"]["wall_s"] - d["duration_s"] for d in kept]
    starts = [d["run"]["container_start_s"] for d in kept if "container_start_s" in d["run"]]
    line = (
        f"{len(kept)} runs: wall {statistics.median(d['run']['wall_s'] for d in kept):.1f} s, suite "
        f"{statistics.median(d['duration_s'] for d in kept):.1f} s, overhead median "
        f"{statistics.median(extra):.2f} s "
        f"(min {min(extra):.2f}, max {max(extra):.2f})"
    )
    return line + (f", container start median {statistics.median(starts):.3f} s" if starts else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.studies.backend_agreement")
    parser.add_argument("docker", type=Path)
    parser.add_argument("local", type=Path)
    parser.add_argument(
        "--docker-verdicts", type=Path, required=True, help="the docker report's verdicts.csv"
    )
    parser.add_argument("--verdicts", action="append", default=[], metavar="NAME=CSV")
    parser.add_argument("--rerun", type=Path, help="a result re-run from one of DOCKER's")
    args = parser.parse_args(argv)

    docker_medians, docker_docs = medians(args.docker)
    local_medians, local_docs = medians(args.local)

    print("## 1. Verdicts row by row (candidate / baseline, bundled cuDNN the baseline)\n")
    others = {name: verdict_rows(Path(p)) for name, p in (v.split("=", 1) for v in args.verdicts)}
    mine = verdict_rows(args.docker_verdicts)
    header = ["source", "workload", "dtype", "docker", *others, *(f"differs from {n}" for n in others)]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    differing = dict.fromkeys(others, 0)
    for row in sorted(mine):
        if not mine[row][0]:
            continue  # a row no report measured (a dtype the workload does not take)
        theirs = [o.get(row, ("-", float("nan"))) for o in others.values()]
        flags = []
        for name, (verdict, _) in zip(others, theirs, strict=True):
            differs = verdict != mine[row][0]
            differing[name] += differs
            flags.append("**yes**" if differs else "")
        shown = [f"{v} {r:.3f}" for v, r in [mine[row], *theirs]]
        print("| " + " | ".join([*row, *shown, *flags]) + " |")
    rows = sum(1 for v in mine.values() if v[0])
    for name, n in differing.items():
        print(f"\n{n} of {rows} rows differ in verdict from {name}")
    print()

    print("## 2. Medians docker / local, same cells, same machine\n")
    shared = sorted(set(docker_medians) & set(local_medians))
    ratios = {row: docker_medians[row] / local_medians[row] for row in shared}
    for row, ratio in sorted(ratios.items(), key=lambda kv: -abs(kv[1] - 1))[:8]:
        print(f"  {' '.join(row):45} docker/local {ratio:.4f}")
    print(f"all rows: {spread(list(ratios.values()))}")
    for source in sorted({r[0] for r in shared}):
        print(f"  {source:9} {spread([v for r, v in ratios.items() if r[0] == source])}")

    print("\n## 3. Wall time per run around the suite\n")
    print(f"docker: {overhead(docker_docs)}")
    print(f"local:  {overhead(local_docs)}")

    if args.rerun:
        print("\n## 4. harness rerun against the result it repeats\n")
        again = jsonio.read(args.rerun)
        cell, round_index = again["cell"]["id"], again["run"].get("round", 1)
        rounds = {
            d["run"].get("round", 1): {
                (m["workload"], m["dtype"]): m["stats"]["median"]
                for m in d["measurements"]
                if m["status"] == "ok"
            }
            for d in docker_docs
            if d["cell"]["id"] == cell
        }
        original = rounds[round_index]
        repeat = {
            (m["workload"], m["dtype"]): m["stats"]["median"]
            for m in again["measurements"]
            if m["status"] == "ok"
        }
        print(
            f"rerun of {cell} round {round_index}: "
            f"{spread([repeat[k] / original[k] for k in original if k in repeat])}"
        )
        pairs = [
            a[k] / b[k]
            for (_, a), (_, b) in itertools.combinations(sorted(rounds.items()), 2)
            for k in a
            if k in b
        ]
        print(f"A/A between that cell's {len(rounds)} rounds (every pair): {spread(pairs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

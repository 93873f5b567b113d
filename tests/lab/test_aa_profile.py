"""lab/studies/aa_profile.py: issue 45's figures from a lease's tables, on tables whose answers are known."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from lab.studies import aa_profile
from tests.evidence import AA_H100

pytestmark = pytest.mark.lab  # the lab's studies and claims (tests/lab/)

PROCESS_FIELDS = [
    "name",
    "result",
    "suite_version",
    "gpu_uuid",
    "duration_s",
    "process_wall_s",
    "numerics",
    "ok",
]


def _write(path: Path, fields: list[str], rows: list[dict[str, str]]) -> None:
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)


def _tables(folder: Path, validation: bool) -> None:
    processes = [
        {"name": "R1-0.15", "suite_version": "0.15", "duration_s": "250.0", "ok": "2"},
        {"name": "R1-0.18", "suite_version": "0.18", "duration_s": "240.0", "ok": "3"},
        {"name": "R2-0.18", "suite_version": "0.18", "duration_s": "210.0", "ok": "3"},
    ]
    for p in processes:
        p.update(result=p["name"], gpu_uuid="GPU-1", process_wall_s="", numerics="1")
    _write(folder / "processes.csv", PROCESS_FIELDS, processes)
    fields = ["workload", "dtype", "knobs"] + [
        f"{n}:{c}" for c in ("us", "stop", "windows_us") for n in ("R1-0.15", "R1-0.18", "R2-0.18")
    ]
    # gemm 1 % apart (4 and 6 windows), relu 0.1 % (3 each), a layer row only 0.18 measured, 0.2 % apart
    medians = [
        ("gemm", "200", "200", "202", "200 200 200 200", "202 202 202 202 202 202"),
        ("relu", "", "10", "10.01", "10 10 10", "10.01 10.01 10.01"),
        ("conv2d_r50_c4_3x3", None, "50", "50.1", "50 50 50", "50.1 50.1 50.1"),
    ]
    rows = []
    for workload, old, a, b, wa, wb in medians:
        row = {f: "" for f in fields}
        row.update(workload=workload, dtype="fp32", knobs="c0d0t0")
        row.update({"R1-0.15:us": old if old is not None else "", "R1-0.18:us": a, "R2-0.18:us": b})
        row.update({"R1-0.18:windows_us": wa, "R2-0.18:windows_us": wb, "R1-0.18:stop": "tf"})
        if old:
            row["R1-0.15:us"] = old
        rows.append(row)
    rows[1]["R1-0.15:us"] = "10"
    _write(folder / "medians.csv", fields, rows)
    table = []
    if validation:
        for run, cell, base in (("v", "bundled", 1.0), ("v", "disabled", 1.2), ("v-aa", "bundled", 1.0)):
            values = " ".join(f"{100 * base * (1 + 0.001 * i):.3f}" for i in range(7))
            table.append({"run": run, "cell": cell, "workload": "gemm", "dtype": "fp32", "knobs": "c0d0t0"})
            table[-1]["round_medians_us"] = values
    _write(
        folder / "validation.csv", ["run", "cell", "workload", "dtype", "knobs", "round_medians_us"], table
    )


@pytest.mark.parametrize("validation", [False, True])
def test_the_three_goals_are_read_from_the_tables(tmp_path, capsys, validation):
    _tables(tmp_path, validation)
    aa_profile.main(["--tables", str(tmp_path), "--trials", "20", "--worst", "2"])
    out = " ".join(capsys.readouterr().out.split())  # words, whatever the columns' widths
    assert "A/A p95 <= 0.5 % over all paired rows: 1.000% (NOT met, 2.00x the goal)" in out
    assert "rows of 100 us or more 1 rows: p50 1.000%" in out
    assert "rows suite 0.15 did not measure 1 rows: p50 0.200%" in out
    assert "suite 0.15's rows 2 rows: p50 0.550%" in out
    assert "windows a row: mean 3.67 (least 3, most 6)" in out and "3: 2 rows 0.20%, 6: 1 rows 1.00%" in out
    worst = out.split("round 1's stop):")[1]
    assert worst.startswith(
        " 1.000% gemm fp32: 200.000 / 202.000 us, windows 4/6, tf 0.200% conv2d_r50_c4_3x3"
    )
    assert (
        "conv2d_r50_c4_3x3 fp32 (not in suite 0.15's)" in worst and "relu" not in worst.split("goal 2")[0]
    )  # the two worst only
    assert "suite 0.18 240.0 s against suite 0.15 250.0 s: 0.960" in out and "(goal <= 1: met)" in out
    if validation:  # a 20 % slower candidate, 7 + 7 rounds: every trial says slower, as the 7+7 verdict
        assert "sequential 3..7 agrees with the 7+7 verdict in 100.0%" in out and "planted x1.05" in out
    else:
        assert "goal 3: no validation rounds" in out


def test_tables_made_from_a_run_folder_need_out(tmp_path):
    with pytest.raises(SystemExit):
        aa_profile.main([str(tmp_path)])


def test_suite_0_15s_own_a_a_counts_only_the_rows_with_its_second_round(tmp_path, capsys):
    _tables(tmp_path, validation=False)
    with (tmp_path / "medians.csv").open() as f:
        rows = list(csv.DictReader(f))
    fields = [*rows[0], "R2-0.15:us", "R1-0.15:windows_us", "R2-0.15:windows_us"]
    for row, second in zip(rows, ("201", "10.03", ""), strict=True):  # gemm 0.5 %, relu 0.3 %
        row.update({"R2-0.15:us": second, "R1-0.15:windows_us": "1 1 1", "R2-0.15:windows_us": "1 1 1"})
        if not second:
            row["R1-0.15:windows_us"] = row["R2-0.15:windows_us"] = ""
    _write(tmp_path / "medians.csv", fields, rows)
    aa_profile.main(["--tables", str(tmp_path), "--trials", "20", "--worst", "2"])
    out = " ".join(capsys.readouterr().out.split())
    assert "suite 0.15's own A/A, its rows 2 rows: p50 0.400%, p95 0.500%, max 0.500%" in out


def _pair(rows: list[tuple[str, str, str, str, str]]) -> aa_profile.Pair:
    """Suite 0.18's two processes over ``rows``: (workload, R1 us, R2 us, R1's windows, R2's windows)."""
    fields = ("R1-0.18:us", "R2-0.18:us", "R1-0.18:windows_us", "R2-0.18:windows_us")
    medians = [
        {"workload": name, "dtype": "fp32", "knobs": "c0d0t0"} | dict(zip(fields, values, strict=True))
        for name, *values in rows
    ]
    return aa_profile.Pair(medians, "R1-0.18", "R2-0.18", "R1-0.15")


def test_the_part_of_the_a_a_more_windows_cannot_average_and_what_a_cap_would_give(tmp_path):
    # relu: both processes' windows alike (0 standard errors apart); gemm: 10 % apart, far beyond its
    # windows' spread; sigmoid: its first 3 windows agree, its later ones (6 in each process) do not
    pair = _pair(
        [
            ("relu", "100", "100", "99 100 101", "99 100 101"),
            ("gemm", "100", "110", "99.9 100 100.1", "109.9 110 110.1"),
            ("sigmoid", "10", "11.5", "10 10 10 10 10 10", "10 10 10 13 13 13"),
        ]
    )
    part = aa_profile.process_part(pair)
    # relu 0, sigmoid 1.5 over sqrt(2.7 / 6) = 2.24, gemm 10 over sqrt(2 x 0.01 / 3) = 122.5 standard errors
    # against Student's t at each row's Welch degrees of freedom: relu and gemm 4 (12.2 %), sigmoid 5 (10.7 %)
    assert (
        "all (3 rows): p50 2.24, p95 122.47; beyond 1.96 in 66.7% (the windows' spread alone: 11.7%)" in part
    )
    assert (
        "both 3 (2 rows): p50 61.24, p95 122.47; beyond 1.96 in 50.0% (the windows' spread alone: 12.2%)"
        in part
    )
    assert part.endswith(
        "others (1 rows): p50 2.24, p95 2.24; beyond 1.96 in 100.0% (the windows' spread alone: 10.7%)"
    )
    caps = aa_profile.window_caps(pair, caps=(3, 6))
    # at 3 windows sigmoid's processes agree (gemm's 10 % is the p95); at 6 they read 15 % apart
    assert caps == (
        "A/A p95 of the first windows' mean, at most: 3: 10.00% (3.00 windows a row), "
        "6: 15.00% (4.00 windows a row)"
    ), caps


def test_later_windows_show_a_place_each_process_keeps():
    # batchnorm: each process's first window off its later ones, which agree closely within a process and
    # lie 5 % apart between the two (a place each keeps); relu: both processes' windows alike
    rows = [
        ("batchnorm", "716.5", "752.5", "740 716 717 716 717", "730 753 752 753 752"),
        ("relu", "100", "100", "100 99 100 101", "100 99 100 101"),
    ]
    later = aa_profile.later_windows(_pair(rows))
    # first windows: 740 / 716.5 and 730 / 752.5 (3.28 %, 2.99 %) beside relu's two at 0
    assert "p50 1.50%, p95 3.28%" in later, later
    # batchnorm's later means are 36 us apart over a standard error of 0.41 us: beyond 3; relu's are equal
    assert "(2 rows of 4 windows or more in both): beyond 1.96 in 50.0%" in later
    assert "beyond 3 in 50.0%" in later
    # too few windows: no figure, and it says why
    short = [(name, a, b, "1 2", "1 2") for name, a, b, _, _ in rows]
    assert "too few rows" in aa_profile.later_windows(_pair(short))


@pytest.mark.slow  # 300 trials a row of the early verdicts: seconds
def test_the_committed_windows3_output_is_what_its_committed_tables_print(capsys):
    # aa-h100/windows3: every row in 3 windows (suite 0.19's default), suite 0.15 on one host
    lease = AA_H100 / "windows3"
    aa_profile.main(["--tables", str(lease)])
    printed = capsys.readouterr().out
    assert printed == (lease / "output.txt").read_text()
    # what the READMEs read from it
    assert "goal 1, A/A p95 <= 0.5 % over all paired rows: 0.992% (NOT met, 1.98x the goal)" in printed
    assert "suite 0.15's own A/A, its rows      256 rows: p50 0.128%, p95 1.015%" in printed
    assert "windows a row: mean 3.00 (least 3, most 3)" in printed
    assert "against suite 0.15 261.8 s, process 263.3 s: 0.846, process 0.850  (goal <= 1: met)" in printed
    for goal in ("(goal >= 99 %: met)", "(goal <= 1 %: met)", "(goal >= 95 %: met)"):
        assert goal in printed

"""Statistics, verdicts and the release gate on synthetic samples with known truth."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from harness import schemas
from harness.cli import output
from harness.report.analysis import (
    autotuning,
    frames,
    numerics_verdicts,
    ran_changes,
    release_gate,
    row_verdicts,
    stats,
)
from harness.report.analysis.frames import KEYS
from harness.report.analysis.model import Analysis, View
from harness.report.writers import verdict_json

ROUNDS = 7
POLICY = release_gate.Policy(output.GATE_EXIT)


def round_medians(
    rng: np.random.Generator, factor: float, rounds: int = ROUNDS, base: float = 1e-3
) -> list[float]:
    """Per-process medians: 400 samples with 1% noise around a per-process offset of 0.02%."""
    out = []
    for _ in range(rounds):
        process = base * factor * (1 + rng.normal(0, 0.0002))
        out.append(float(np.median(process * (1 + rng.normal(0, 0.01, 400)))))
    return out


@pytest.mark.parametrize("seed", range(20))
def test_a_a_comparisons_never_call_a_regression(seed):
    rng = np.random.default_rng(seed)
    result = stats.judge(round_medians(rng, 1.0), round_medians(rng, 1.0), 5.0, 0.002)
    assert result.verdict == "same", result.reason
    assert result.ci_low <= 1 <= result.ci_high or abs(result.ratio - 1) < 0.002


@pytest.mark.parametrize(
    ("slowdown", "expected"),
    [(1.03, "same"), (1.05, "slower"), (1.10, "slower"), (1 / 1.10, "faster"), (1 / 1.03, "same")],
)
@pytest.mark.parametrize("seed", range(5))
def test_planted_changes_against_a_5_percent_threshold(slowdown, expected, seed):
    rng = np.random.default_rng(100 + seed)
    result = stats.judge(round_medians(rng, 1.0), round_medians(rng, slowdown), 5.0, 0.002)
    assert result.verdict == expected, result.reason
    assert result.ratio == pytest.approx(slowdown, rel=0.002)
    assert result.ci_low <= result.ratio <= result.ci_high


def test_too_few_rounds_for_the_significance_level_is_inconclusive_and_says_why():
    rng = np.random.default_rng(7)
    result = stats.judge(round_medians(rng, 1.0, 2), round_medians(rng, 1.10, 2), 5.0, 0.002)
    assert result.verdict == "inconclusive"
    assert "2+2 rounds decide nothing (smallest p 0.33" in result.reason
    assert stats.smallest_p(7, 7) < 0.002 < stats.smallest_p(6, 6)
    # a looser alpha that 5 rounds can reach: the Mann-Whitney test judges them
    looser = stats.judge(round_medians(rng, 1.0, 5), round_medians(rng, 1.10, 5), 5.0, 0.01)
    assert looser.verdict == "slower" and "Welch" not in looser.reason


@pytest.mark.parametrize("sizes", [(2, 2), (2, 3), (3, 2), (2, 7)])
def test_two_rounds_a_side_never_show_the_same_either(sizes):
    # the bootstrap interval over two medians a side is as narrow as the two happen to agree: here it lies
    # inside the threshold, yet no test could have shown a change, so none shows sameness
    rng = np.random.default_rng(11)
    result = stats.judge(round_medians(rng, 1.0, sizes[0]), round_medians(rng, 1.01, sizes[1]), 5.0, 0.002)
    assert 1 / 1.05 < result.ci_low <= result.ci_high < 1.05
    assert result.verdict == "inconclusive" and "decide nothing (smallest p" in result.reason


@pytest.mark.parametrize(
    ("slowdown", "expected"), [(1.0, "same"), (1.03, "same"), (1.10, "slower"), (1 / 1.10, "faster")]
)
@pytest.mark.parametrize("rounds", [3, 5])
def test_fewer_than_7_rounds_are_judged_by_welch_and_an_equivalence_test(slowdown, expected, rounds):
    rng = np.random.default_rng(rounds)
    result = stats.judge(round_medians(rng, 1.0, rounds), round_medians(rng, slowdown, rounds), 5.0, 0.002)
    assert result.verdict == expected, result.reason
    assert f"{rounds}+{rounds} rounds, Welch's t on log medians" in result.reason
    assert result.ci_low <= result.ratio <= result.ci_high
    assert result.ratio == pytest.approx(slowdown, rel=0.002)


def test_welch_cannot_call_same_where_the_rounds_disagree():
    # rounds 5 % apart on one side: the interval reaches past the threshold, so more rounds are needed
    result = stats.judge([1.0, 1.05, 1.0], [1.0, 1.0, 1.05], 5.0, 0.002)
    assert result.verdict == "inconclusive"
    assert "more rounds narrow it" in result.reason
    # rounds wildly apart (a busy CPU): the interval's far end reads in three figures
    wild = stats.judge([1.0, 30.0, 1.0], [1.0, 1.0, 30.0], 5.0, 0.002)
    assert wild.verdict == "inconclusive" and "e+" in stats.interval_text(wild.ci_low, wild.ci_high)
    assert stats.interval_text(0.98765, 1.0123) == "[0.988, 1.012]"


@pytest.mark.parametrize("alpha", [1e-12, 1e-300])
def test_a_tiny_alpha_over_few_rounds_gives_an_open_interval_not_an_overflow(alpha):
    # one side's rounds nearly equal: Welch's degrees of freedom near 1, and t at 1 - alpha beyond any exp
    found = stats.judge([1.0, 1.0, 1.0000001], [1.2, 1.5, 1.9], 5, alpha)
    assert found.verdict == "inconclusive" and 1.4 < found.ratio < 1.6
    assert 0 < found.ci_low < 1e-300 and 1e300 < found.ci_high < float("inf")
    assert "reaches beyond the 5% threshold" in found.reason


def test_one_process_per_side_gives_a_ratio_but_no_verdict():
    rng = np.random.default_rng(3)
    a, b = list(rng.normal(1e-3, 1e-5, 500)), list(rng.normal(2e-3, 1e-5, 500))
    result = stats.judge(a, b, 5.0, 0.002, basis="samples")
    assert result.verdict == "inconclusive" and result.ratio == pytest.approx(2.0, rel=0.01)
    assert "one process per side" in result.reason


def frame(rows: list[dict]) -> pd.DataFrame:
    base = {"workload": "conv", "dtype": "fp32", "knobs": "benchmark=0", "status": "ok", "error": None}
    return pd.DataFrame([{**base, **r} for r in rows])


def timing_rows(base: list[float], cand: list[float], **extra) -> pd.DataFrame:
    rows = [{"group": "A", "median_s": m, "file": f"a{i}", "round": i} for i, m in enumerate(base)]
    rows += [{"group": "B", "median_s": m, "file": f"b{i}", "round": i, **extra} for i, m in enumerate(cand)]
    return frame(rows)


def test_a_workload_that_stops_running_in_the_candidate_is_a_failed_regression():
    rng = np.random.default_rng(1)
    rows = timing_rows(
        round_medians(rng, 1.0), [None] * ROUNDS, status="error", error="CUDNN_STATUS_BAD_PARAM"
    )
    result = row_verdicts.timing(rows, "A", ("A", "B"), lambda _: 5.0, 0.002, {})
    assert list(result["verdict"]) == ["failed"] and "CUDNN_STATUS_BAD_PARAM" in result["reason"][0]
    gate = release_gate.gate(result, pd.DataFrame(), [], POLICY)
    assert gate.outcome == "regression" and gate.exit_code == 1


def test_a_measurement_timed_by_graph_replay_on_one_side_only_is_not_a_verdict():
    rng = np.random.default_rng(4)
    rows = timing_rows(round_medians(rng, 1.0), round_medians(rng, 1.2), timer="cuda_event")
    rows["timer"] = rows["timer"].fillna("cuda_graph")  # the baseline's rounds were replayed graphs
    result = row_verdicts.timing(rows, "A", ("A", "B"), lambda _: 5.0, 0.002, {})
    assert list(result["verdict"]) == ["inconclusive"]
    assert "timed differently (baseline cuda_graph, candidate cuda_event)" in result["reason"][0]
    assert (result["timer_baseline"][0], result["timer_candidate"][0]) == ("cuda_graph", "cuda_event")
    assert result["ratio"][0] == pytest.approx(1.2, rel=0.01)  # the ratio is still shown
    rows["timer"] = "cuda_graph"  # the same data timed alike on both sides is a regression
    assert list(row_verdicts.timing(rows, "A", ("A", "B"), lambda _: 5.0, 0.002, {})["verdict"]) == ["slower"]


def test_autotuning_on_a_busy_host_is_never_a_verdict_as_in_the_verdict_table():
    rng = np.random.default_rng(5)
    off, on = round_medians(rng, 1.0), round_medians(rng, 0.8)  # autotuning bought 20 %
    rows = frame(
        [
            {"group": "A", "median_s": m, "file": f"off{i}", "round": i, "cudnn_benchmark": False}
            for i, m in enumerate(off)
        ]
        + [
            {"group": "A", "median_s": m, "file": f"on{i}", "round": i, "cudnn_benchmark": True}
            for i, m in enumerate(on)
        ]
    ).assign(deterministic=False, tf32=False, stalled=None)
    quiet = autotuning.compare(rows, ["A"], lambda _: 5.0, 0.002, {})
    assert list(quiet["verdict"]) == ["faster"]
    rows.loc[rows.index[-1], "stalled"] = "the host was busy (load 3.1)"
    busy = autotuning.compare(rows, ["A"], lambda _: 5.0, 0.002, {})
    assert list(busy["verdict"]) == ["inconclusive"] and busy["ratio"][0] == quiet["ratio"][0]
    assert busy["reason"][0] == "busy host: 1 of the benchmark-on's rounds (the host was busy (load 3.1))"


def test_the_gate_keeps_regressions_and_infrastructure_failures_apart_and_the_cli_gives_their_exit_codes():
    rng = np.random.default_rng(2)
    slower = row_verdicts.timing(
        timing_rows(round_medians(rng, 1.0), round_medians(rng, 1.2)),
        "A",
        ("A", "B"),
        lambda _: 5.0,
        0.002,
        {},
    )
    same = row_verdicts.timing(
        timing_rows(round_medians(rng, 1.0), round_medians(rng, 1.0)),
        "A",
        ("A", "B"),
        lambda _: 5.0,
        0.002,
        {},
    )
    unsure = row_verdicts.timing(
        timing_rows(round_medians(rng, 1.0, 2), round_medians(rng, 1.2, 2)),
        "A",
        ("A", "B"),
        lambda _: 5.0,
        0.002,
        {},
    )
    none = pd.DataFrame()
    killed = ["C round 1: container killed"]
    assert (
        release_gate.gate(same, none, [], POLICY).outcome,
        release_gate.gate(same, none, [], POLICY).exit_code,
    ) == ("pass", 0)
    assert release_gate.gate(slower, none, [], POLICY).exit_code == 1
    assert release_gate.gate(same, none, killed, POLICY).outcome == "infrastructure-failure"
    assert release_gate.gate(same, none, killed, POLICY).exit_code == 3
    assert (
        release_gate.gate(slower, none, killed, POLICY).outcome == "regression"
    )  # re-running won't clear it
    gate = release_gate.gate(unsure, none, [], POLICY)
    assert gate.exit_code == 0 and gate.outcome == "pass-with-inconclusive"
    assert any("NOT evidence of no change" in line for line in gate.lines)
    strict = release_gate.gate(unsure, none, [], release_gate.Policy(output.GATE_EXIT, strict=True))
    assert (strict.outcome, strict.exit_code) == ("regression", 1)
    # the library records the code the CLI chose for each outcome; it chooses none itself
    assert set(output.GATE_EXIT) == set(release_gate.OUTCOMES)
    other = release_gate.Policy(dict.fromkeys(release_gate.OUTCOMES, 7))
    assert release_gate.gate(slower, none, [], other).exit_code == 7


def numerics_rows(dtype: str, base_rmse: float, cand_rmse: float, cand_nan: int = 0) -> pd.DataFrame:
    common = {"digest": "0" * 64, "bitwise_repeatable": True, "within_tolerance": True}
    return frame(
        [
            {"group": "A", "dtype": dtype, "rel_rmse": base_rmse, "nan_count": 0, "file": "a", **common},
            {
                "group": "B",
                "dtype": dtype,
                "rel_rmse": cand_rmse,
                "nan_count": cand_nan,
                "file": "b",
                **common,
                "digest": "1" * 64,
            },
        ]
    )


@pytest.mark.parametrize(
    ("dtype", "base", "cand", "nan", "expected"),
    [
        ("fp32", 1e-6, 1.9e-6, 0, "ok"),  # within 2x + 1e-5
        ("fp32", 1e-6, 5e-5, 0, "worse"),  # beyond 2 x 1e-6 + 1e-5
        ("bf16", 4e-3, 1.1e-2, 0, "ok"),  # bf16: 3 x 4e-3 + 1e-3
        ("bf16", 4e-3, 2e-2, 0, "worse"),
        ("fp32", 1e-6, 1e-6, 3, "worse"),  # new NaNs
    ],
)
def test_the_numerics_gate_uses_the_dynamo_rule(dtype, base, cand, nan, expected):
    result = numerics_verdicts.numerics(numerics_rows(dtype, base, cand, nan), "A", ("A", "B"))
    assert list(result["numerics"]) == [expected]
    assert not result["same_digest"][0]
    assert release_gate.gate(pd.DataFrame(columns=["verdict", *KEYS]), result, [], POLICY).exit_code == (
        1 if expected == "worse" else 0
    )


@pytest.mark.parametrize(
    ("within", "expected", "sides"),
    [
        ((True, False), "worse", "candidate"),  # the switch put it beyond its tolerance: gated
        ((False, False), "ok", "both"),  # beyond on both sides: listed, not gated
        ((False, True), "ok", "baseline"),
        ((True, True), "ok", None),
    ],
)
def test_a_measurement_beyond_its_tolerance_fails_the_gate_only_where_the_switch_put_it_there(
    within, expected, sides
):
    # the errors themselves pass the relative rule (1.6e-5 <= 2 x 1.5e-5 + 1e-5): only the tolerance decides
    rows = numerics_rows("fp32", 1.5e-5, 1.6e-5)
    rows["tolerance"] = 1e-5
    rows["within_tolerance"] = list(within)
    rows["inf_count"] = 0
    result = numerics_verdicts.numerics(rows, "A", ("A", "B"))
    assert list(result["numerics"]) == [expected] and list(result["beyond_tolerance"]) == [sides]
    beyond = numerics_verdicts.beyond_tolerance(rows, ("A", "B"))
    assert list(beyond["group"]) == [g for g, ok in zip("AB", within, strict=True) if not ok]
    assert all(beyond["tolerance"] == 1e-5) and all(beyond["rel_rmse"] > 1e-5)
    gate = release_gate.gate(pd.DataFrame(columns=["verdict", *KEYS]), result, [], POLICY, beyond)
    assert gate.exit_code == (1 if expected == "worse" else 0)
    assert sum("BEYOND TOLERANCE" in line for line in gate.lines) == len(beyond)
    if sides == "both":
        assert "on both sides" in result["reason"][0]
    if expected == "worse":
        assert "every baseline round is within it" in result["reason"][0]


def _ran(rows: pd.DataFrame, side: str, kernels: list[str], attention: str | None = None, cudnn: bool = True):
    """What each round of ``side`` ran, as frames.long_form puts it."""
    at = rows["group"] == side
    rows.loc[at, "ran"] = "\t".join(sorted(kernels))
    rows.loc[at, "top_kernel"] = kernels[0]
    rows.loc[at, "attention_backend"] = attention
    rows.loc[at, "cudnn_used"] = cudnn


def test_every_verdict_row_says_whether_the_same_kernels_ran_and_what_changed():
    rng = np.random.default_rng(11)
    rows = timing_rows(round_medians(rng, 1.0), round_medians(rng, 1.5))
    for column in ("ran", "top_kernel", "attention_backend", "cudnn_used"):
        rows[column] = None
    unknown = row_verdicts.timing(rows, "A", ("A", "B"), lambda _: 5.0, 0.002, {})
    assert unknown["what_ran"].isna().all()  # results recorded before what_ran say nothing

    cudnn_sdpa = "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16"
    flash = "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128>>(Flash_fwd_params)"
    _ran(rows, "A", [cudnn_sdpa], "cudnn")
    _ran(rows, "B", [cudnn_sdpa], "cudnn")
    same = row_verdicts.timing(rows, "A", ("A", "B"), lambda _: 5.0, 0.002, {})
    assert (same["verdict"][0], same["what_ran"][0], same["ran_change"][0]) == ("slower", "same", None)
    assert same["ran_baseline"][0] == same["ran_candidate"][0] == cudnn_sdpa  # each side names what it ran

    _ran(rows, "B", [flash], "flash", cudnn=False)
    changed = row_verdicts.timing(rows, "A", ("A", "B"), lambda _: 5.0, 0.002, {})
    assert changed["what_ran"][0] == "changed"
    assert changed["ran_change"][0] == "attention backend cudnn -> flash"  # a dispatch change, said so
    assert changed["ran_candidate"][0] == "pytorch_flash::flash_fwd_kernel"

    _ran(rows, "B", ["sm90_xmma_fprop_implicit_gemm_bf16 (x)"], "cudnn")
    assert row_verdicts.timing(rows, "A", ("A", "B"), lambda _: 5.0, 0.002, {})["ran_change"][0] == (
        f"largest kernel: {cudnn_sdpa} -> sm90_xmma_fprop_implicit_gemm_bf16"
    )
    # cuDNN off: no side ran attention, which pandas records as NaN on both; the change is cuDNN's
    _ran(rows, "A", ["sm90_xmma_fprop_implicit_gemm_bf16 (x)"], float("nan"))
    _ran(rows, "B", ["void at::native::im2col_kernel<c10::BFloat16>(long)"], float("nan"), cudnn=False)
    assert row_verdicts.timing(rows, "A", ("A", "B"), lambda _: 5.0, 0.002, {})["ran_change"][0] == (
        "cuDNN -> no cuDNN, largest kernel: sm90_xmma_fprop_implicit_gemm_bf16 -> at::native::im2col_kernel"
    )
    rows.loc[rows.index[-1], "ran"] = "another algorithm, picked by autotuning in one process"
    varies = row_verdicts.timing(rows, "A", ("A", "B"), lambda _: 5.0, 0.002, {})
    assert varies["what_ran"][0] == "varies" and "rounds of the candidate" in varies["ran_change"][0]
    assert schemas.problems("verdict", _document(varies), "verdict.json") == []


def test_rows_group_by_the_kind_of_change_they_name():
    assert ran_changes.change_kind("cuDNN -> no cuDNN, largest kernel: a -> b") == "cuDNN -> no cuDNN"
    assert ran_changes.change_kind("largest kernel: a -> b") == "largest kernel"
    assert ran_changes.change_kind("other kernels: 1 new, 0 gone") == "other kernels"
    both = "attention backend cudnn,flash -> flash"  # one side ran two backends: its list stays whole
    assert ran_changes.change_kind(both) == both


def test_a_kernel_is_named_without_its_template_arguments_and_parameters():
    depthwise = "void at::native::(anonymous namespace)::conv_depthwise2d_forward_kernel<1, int>(float*)"
    assert frames.short_kernel(depthwise) == "at::native::conv_depthwise2d_forward_kernel"
    assert frames.short_kernel("sm90_xmma_gemm_bf16 (x)") == "sm90_xmma_gemm_bf16"


def _document(timing: pd.DataFrame) -> dict:
    gate = release_gate.gate(timing, pd.DataFrame(), [], POLICY)
    view = View("t", "A", ("A", "B"), {}, 5.0, 0.002, 7, "")
    empty = pd.DataFrame()
    return verdict_json.document(view, Analysis(empty, timing, empty, empty, empty, gate, {}, {}))


def test_noisy_measurements_and_rows_are_counted_for_the_warning_at_the_top():
    from harness.report.sections import answer

    rows = timing_rows([1.0, 1.01, 0.99], [1.0, 1.3, 0.8])  # B's rounds vary by ~24 %: a noisy row
    rows["rel_iqr"] = [0.01, 0.02, 0.01, 0.25, 0.01, 0.01]  # one of B's runs spread 25 % within itself
    within, between = answer._spread(rows)
    assert (within, between) == (1, 1)
    calm = timing_rows([1.0, 1.01, 0.99], [1.0, 1.01, 0.99])
    calm["rel_iqr"] = 0.01
    assert answer._spread(calm) == (0, 0)


def test_measurements_that_could_not_record_what_ran_are_said_at_the_top():
    from types import SimpleNamespace

    from harness.report.sections import answer

    rows = timing_rows([1.0, 1.0], [1.0, 1.0])
    rows["what_ran_error"] = [None, None, "RuntimeError: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES", None]
    analysis = SimpleNamespace(docs={}, frame=rows, timing=pd.DataFrame(), beyond_tolerance=pd.DataFrame())
    (said,) = answer._validity(analysis)  # type: ignore[arg-type]
    assert said.startswith("1 measurements could not record what ran (RuntimeError: CUPTI_ERROR")

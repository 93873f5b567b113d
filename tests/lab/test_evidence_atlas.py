"""The committed evidence of issue 40's later leases: what their READMEs claim holds, re-derived from the
results (release-atlas's stem-bf16, remaining-path, step-d4a-e4b and step-e4b; torch-build-docker), or from
the committed render where the results left the tree (torch-axis-h100/t215/report: its results are in git at
83e44d6; resnet-layers-report, layer-path-report: their results are in git at 247c2cc; remaining-ends-report:
at 679a6b7; variants-report, variants-path-report: at cb71162; variants-backward-report: at 57694ad;
variants-backward-path-report: at ff50c59; variants-backward-step-report: at 60801c5; locate-a-report,
last-rows-report, last-rows-g2-report, undecided-report: at the commits the lab's README names)."""

from __future__ import annotations

import statistics
from pathlib import Path

import pandas as pd
import pytest

from harness.results import documents
from tests.conftest import run_cli
from tests.evidence import RELEASE_ATLAS, TORCH_AXIS_H100, TORCH_BUILD_DOCKER

# the lab's claims (tests/lab/); each renders or reloads committed GPU results: seconds each
pytestmark = [pytest.mark.lab, pytest.mark.slow]

T215 = TORCH_AXIS_H100 / "t215"

# How often torchvision's ResNet-50 (v1.5) runs each distinct convolution of layers.py: stage 2's expand
# shape is also its downsample's; each later stage has one first block and n - 1 others.
RESNET50_RUNS = {"7x7s2": 1, "c2_reduce1": 1, "3x3": 3, "c2_expand": 4, "1x1": 2}
for _stage, _blocks in ((3, 4), (4, 6), (5, 3)):
    RESNET50_RUNS |= {f"c{_stage}_{name}": 1 for name in ("reduce1", "3x3s2", "down")}
    RESNET50_RUNS |= {
        f"c{_stage}_expand": _blocks,
        f"c{_stage}_reduce": _blocks - 1,
        f"c{_stage}_3x3": _blocks - 1,
    }


def _render(results: Path, matrix: Path, out: Path, exit_code: int = 1) -> dict[str, pd.DataFrame]:
    """Render a lease's results; ``exit_code`` 1 where it holds slower rows against its baseline."""
    done = run_cli("report", "--results", str(results), "--matrix", str(matrix), "--out", str(out))
    assert done.returncode == exit_code, done.stdout + done.stderr
    return {
        name: pd.read_csv(out / f"{name}.csv")
        for name in ("changes", "verdicts", "results", "per_torch", "families")
        if (out / f"{name}.csv").exists()
    }


@pytest.fixture(scope="module")
def layers() -> dict[str, pd.DataFrame]:
    """Lease 7's committed render (its results are in git at 247c2cc)."""
    return _committed(RELEASE_ATLAS / "resnet-layers-report")


def _committed(report: Path, names: tuple[str, ...] = ("changes", "verdicts")) -> dict[str, pd.DataFrame]:
    """A lease's committed render (its results left the tree for git: the lab's README says where)."""
    return {name: pd.read_csv(report / f"{name}.csv") for name in names}


def _release(cell_ids: pd.Series) -> pd.Series:
    """The PyPI cuDNN release of each cell id (``...cudnn-wheel-9.21.0.82_<hash>``; NaN for bundled)."""
    return cell_ids.str.extract(r"wheel-([\d.]+)_")[0]


def _by_release(verdicts: pd.DataFrame, workload: str) -> pd.DataFrame:
    """One workload's verdict rows, indexed by their cell's PyPI release."""
    rows = verdicts[verdicts["workload"] == workload]
    return rows.set_index(_release(rows["group"]))


def _step_counts(families: pd.DataFrame) -> pd.DataFrame:
    """Each adjacent step's verdict counts (families.csv's rows against the release before, not the baseline),
    indexed by the later release."""
    adjacent = families[~families["compared"].str.startswith("installed")]
    return adjacent.groupby("compared")[["faster", "slower", "same", "undecided"]].sum()


def steps(changes: pd.DataFrame, workload: str, dtype: str) -> list[tuple[str, str, str]]:
    rows = changes[(changes["workload"] == workload) & (changes["dtype"] == dtype)]
    return [(r.before, r.after, r.verdict) for r in rows.itertuples() if r.verdict in ("slower", "faster")]


def test_the_step_and_three_layer_rows_became_slower_at_9_21_0_82(layers):
    changes = layers["changes"]
    at_9_21 = ("9.20.0.48", "9.21.0.82", "slower")
    for row in (
        "train_resnet50",
        "conv2d_r50_c2_expand_bwd_weight",
        "conv2d_r50_c3_reduce1_bwd_weight",
        "conv2d_r50_c3_3x3_bwd_data",
    ):
        assert steps(changes, row, "fp32") == [at_9_21], row
    slower = changes[(changes["verdict"] == "slower") & (changes["after"] == "9.21.0.82")]
    assert len(slower) == 4  # nothing else became slower there
    verdicts = layers["verdicts"]
    at_9_20 = verdicts[verdicts["group"].str.contains("9.20.0.48")]
    assert len(at_9_20) == 70 and set(at_9_20["verdict"]) == {"same"}  # 9.20.0.48 is bundled's time


def test_the_layer_rows_weighted_by_their_runs_add_up_to_the_step(layers):
    verdicts = layers["verdicts"]
    verdicts = verdicts.assign(release=_release(verdicts["group"]))
    medians = verdicts.pivot_table(
        index="workload", columns="release", values="median_candidate_s", aggfunc="first"
    )
    before, after = "9.20.0.48", "9.21.0.82"
    change = (medians[after] - medians[before]) * 1e3  # ms
    layer_sum = sum(
        runs * change[f"conv2d_r50_{layer}{suffix}"]
        for layer, runs in RESNET50_RUNS.items()
        for suffix in ("", "_bwd_data", "_bwd_weight")
        if not (layer == "7x7s2" and suffix == "_bwd_data")  # the input takes no gradient
    )
    assert sum(RESNET50_RUNS.values()) == 53
    step = change["train_resnet50"]
    assert 14.5 < step < 15.7 and abs(layer_sum - step) < 0.05 * step, (layer_sum, step)


def test_torch_2_15_0s_answer_per_source() -> None:
    """The t215 lease's committed render (its results are in git at 83e44d6; torch-defaults/t215 ran
    2.15.0 again, and tests/lab/test_evidence_precision.py checks what it pinned and loaded)."""
    per_torch = pd.read_csv(T215 / "report" / "per_torch.csv")
    step = per_torch[(per_torch["workload"] == "train_resnet50") & (per_torch["dtype"] == "fp32")]
    assert set(step["verdict"]) == {"faster"} and step["ratio"].between(0.7, 0.8).all()
    attention = per_torch[
        per_torch["workload"].str.startswith("sdpa") & (per_torch["cudnn"] == "system:auto")
    ]
    assert set(attention["verdict"]) == {"slower"} and len(attention) == 3


def test_the_docker_cell_built_its_torch_from_the_wheelhouse_and_agrees_with_local():
    for side, backend in (("docker", "docker"), ("local", "local")):
        loaded = documents.load(TORCH_BUILD_DOCKER / side)
        assert loaded.quarantined == () and len(loaded.documents) == 3
        for doc in loaded.documents:
            assert doc["run"]["backend"] == backend and doc["cell"]["torch"] == "2.11.0"
            assert doc["environment"]["torch"]["version"] == "2.11.0+cu130"
            assert doc["cudnn"]["verified"] and doc["cudnn"]["runtime_version"] == "9.19.0"
            assert doc["nccl"]["verified"] and doc["nccl"]["runtime_version"] == "2.28.9"
            assert {m["status"] for m in doc["measurements"]} == {"ok"}
            if (
                backend == "docker"
            ):  # the built torch, not the image's own (torch: image runs /opt/torch/.venv)
                assert doc["run"]["image"]["python"] == "/opt/venv/bin/python"
                assert doc["environment"]["torch"]["path"].startswith("/opt/venv/")
    done = run_cli("compare", str(TORCH_BUILD_DOCKER / "local"), str(TORCH_BUILD_DOCKER / "docker"))
    assert done.returncode == 0, done.stderr
    assert "0 slower, 0 faster, 14 same, 1 inconclusive" in done.stdout


# Leases 8 to 11: the dtype and layout pairs lease 1 left out, and where every change of the layer rows began.
THE_TWO_STEPS = {("9.20.0.48", "9.21.0.82"), ("9.26.1.1", "9.27.0.42")}


def _changes(name: str, tmp_path_factory) -> pd.DataFrame:
    out = tmp_path_factory.mktemp(name)
    done = run_cli("report", "--results", str(RELEASE_ATLAS / name), "--out", str(out))
    assert done.returncode in (0, 1), done.stderr
    return pd.read_csv(out / "changes.csv")


@pytest.fixture(scope="module")
def layer_path() -> pd.DataFrame:
    """Lease 9's committed render (its results are in git at 247c2cc)."""
    return _committed(RELEASE_ATLAS / "layer-path-report", ("changes",))["changes"]


def test_the_layer_rows_changed_at_9_21_0_82_came_back_at_9_26_1_1_to_9_27_0_42(layer_path):
    # lease 9: every release from 9.21.0.82 to 9.28.0.42 against bundled; each row's first step is
    # bundled -> 9.21.0.82 (lease 7 put it at 9.20.0.48 -> 9.21.0.82), its next one at 9.26.1.1 -> 9.27.0.42
    slower_then_back = (
        "train_resnet50",
        "conv2d_r50_c2_expand_bwd_weight",
        "conv2d_r50_c3_reduce1_bwd_weight",
        "conv2d_r50_c3_3x3_bwd_data",
    )
    for row in slower_then_back:
        assert steps(layer_path, row, "fp32") == [
            ("9.19.0 (bundled)", "9.21.0.82", "slower"),
            ("9.26.1.1", "9.27.0.42", "faster"),
        ], row
    judged = layer_path[layer_path["verdict"].isin(["slower", "faster"])]
    later = judged[judged["before"] != "9.19.0 (bundled)"]
    pairs = set(zip(later["before"], later["after"], strict=True))
    assert pairs == {("9.26.1.1", "9.27.0.42"), ("9.27.0.42", "9.28.0.42")}  # nothing between
    # the 90th change: conv2d_unet_e4a fp32, slower at 9.26.1.1 -> 9.27.0.42
    assert ("9.26.1.1", "9.27.0.42", "slower") in steps(layer_path, "conv2d_unet_e4a", "fp32")
    # conv2d_unet_mid_b fp32: other kernels at 9.23.2.1 -> 9.24.0.43, its time unchanged
    mid_b = layer_path[(layer_path["workload"] == "conv2d_unet_mid_b") & (layer_path["before"] == "9.23.2.1")]
    assert list(mid_b["after"]) == ["9.24.0.43"] and list(mid_b["verdict"]) == ["same"]
    assert mid_b["what_ran"].iloc[0].startswith("largest kernel:")


@pytest.fixture(scope="module")
def variants() -> pd.DataFrame:
    return pd.read_csv(RELEASE_ATLAS / "variants-report" / "changes.csv")  # its results: git, cb71162


def test_the_other_dtype_and_layout_pairs_moved_both_ways_at_9_28_1_4(variants):
    # lease 8: 148 forward rows in TF32 NCHW, bf16 NCHW, fp32 NHWC and fp16 NHWC, bundled against 9.28.1.4
    counts = variants["verdict"].value_counts().to_dict()
    assert counts.get("slower") == 20 and counts.get("faster") == 14
    fp32_nhwc = variants[(variants["dtype"] == "fp32") & variants["workload"].str.endswith(".cl")]
    assert (fp32_nhwc["verdict"] == "slower").sum() == 18 and (fp32_nhwc["verdict"] == "faster").sum() == 5
    fp16 = variants[variants["dtype"] == "fp16"]
    assert not fp16["verdict"].isin(["slower", "faster"]).any()


@pytest.fixture(scope="module")
def variants_path() -> pd.DataFrame:
    return pd.read_csv(RELEASE_ATLAS / "variants-path-report" / "changes.csv")  # its results: git, cb71162


@pytest.fixture(scope="module")
def stem(tmp_path_factory) -> pd.DataFrame:
    return _changes("stem-bf16", tmp_path_factory)


def test_every_change_of_the_other_pairs_lies_between_two_adjacent_releases(variants_path, stem):
    # lease 10: the 34 rows lease 8 judged, at the ends of the two steps and next to the atlas's ends
    judged = variants_path[variants_path["verdict"].isin(["slower", "faster"])]
    assert len(judged) == 44  # 18 at 9.21.0.82, 25 at 9.27.0.42, one between
    pairs = set(zip(judged["before"], judged["after"], strict=True))
    assert pairs == THE_TWO_STEPS | {("9.21.0.82", "9.26.1.1")}  # nothing at 9.19.1.2, 9.20.0.48 or 9.28
    assert steps(variants_path, "conv2d_r50_7x7s2", "bf16") == [("9.21.0.82", "9.26.1.1", "faster")]
    # lease 11: that one, the stem in bf16, at every release between: 9.25.1.1 -> 9.26.0.51, as its NHWC twin
    for row in ("conv2d_r50_7x7s2", "conv2d_r50_7x7s2.cl"):
        assert steps(stem, row, "bf16") == [("9.25.1.1", "9.26.0.51", "faster")], row


@pytest.fixture(scope="module")
def backward() -> dict[str, pd.DataFrame]:
    report = RELEASE_ATLAS / "variants-backward-report"  # its results: git, 57694ad
    return {name: pd.read_csv(report / f"{name}.csv") for name in ("families", "changes")}


def test_the_backward_passes_of_the_other_pairs_moved_both_ways_at_9_28_1_4(backward):
    # lease 12: 296 backward rows (data and weight) in TF32 NCHW, bf16 NCHW, fp32 NHWC and fp16 NHWC
    families = backward["families"]
    families = families[families["compared"] == "9.28.1.4"]
    assert len(families) == 8 and set(families["rows"]) == {37}
    assert (families["faster"].sum(), families["slower"].sum(), families["undecided"].sum()) == (38, 30, 18)
    # every family but TF32 backward-weight (0 faster, 4 slower) moved both ways
    one_way = families[~families["both_ways"]]
    one_way_pairs = list(zip(one_way["family"], one_way["dtype"], strict=True))
    assert one_way_pairs == [("conv backward-weight NCHW", "tf32")]
    changes = backward["changes"]
    worst = changes.loc[changes["ratio"].idxmax()]
    assert (worst["workload"], worst["dtype"], worst["verdict"]) == (
        "conv2d_r50_c3_reduce_bwd_weight.cl",
        "fp32",
        "slower",
    )
    assert 4.1 < worst["ratio"] < 4.4
    assert worst["what_ran"].startswith("largest kernel: wgrad_alg0_engine_NHWC ->")
    fft = changes[(changes["workload"] == "conv2d_unet_d3a_bwd_data.cl") & (changes["dtype"] == "fp32")]
    assert fft["ratio"].between(3.7, 3.95).all()
    assert fft["what_ran"].str.endswith("-> DSE::regular_fft_pad").all()


@pytest.fixture(scope="module")
def backward_path() -> dict[str, pd.DataFrame]:
    report = RELEASE_ATLAS / "variants-backward-path-report"  # its results: git, ff50c59
    frames = {name: pd.read_csv(report / f"{name}.csv") for name in ("verdicts", "changes")}
    frames["summary"] = pd.DataFrame({"text": [(report / "summary.md").read_text()]})
    return frames


def _judged_at_9_28_1_4(backward: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Lease 12's 68 rows judged slower or faster at 9.28.1.4 against bundled."""
    changes = backward["changes"]
    judged = changes[changes["verdict"].isin(["slower", "faster"])]
    return judged[["workload", "dtype", "verdict", "ratio"]]


def test_32_of_the_68_backward_changes_are_at_9_21_0_82_and_26_after_it(backward, backward_path):
    # lease 13 stopped after 20 of 24 processes: 9.26.1.1 to 9.28.1.4 hold 2 rounds, which judge nothing
    summary = backward_path["summary"]["text"].iloc[0]
    assert "4 of the 8 groups hold fewer rounds than the 3 asked of every row (E 2, F 2, G 2, H 2)" in summary
    verdicts = backward_path["verdicts"]
    counts = verdicts.groupby("release")["verdict"].value_counts().unstack(fill_value=0)
    for release in ("9.19.1.2", "9.20.0.48"):
        assert counts.loc[release].get("slower", 0) == counts.loc[release].get("faster", 0) == 0, release
    assert (counts.loc["9.21.0.82", "slower"], counts.loc["9.21.0.82", "faster"]) == (14, 23)
    for release in ("9.26.1.1", "9.27.0.42", "9.28.0.42", "9.28.1.4"):
        assert set(verdicts[verdicts["release"] == release]["verdict"]) == {"inconclusive"}, release
    # lease 12's 68 judged changes at 9.28.1.4, as 9.21.0.82 stood against bundled
    at_9_21 = verdicts[verdicts["release"] == "9.21.0.82"]
    joined = _judged_at_9_28_1_4(backward).merge(at_9_21, on=["workload", "dtype"], suffixes=("_12", "_13"))
    assert len(joined) == 68
    agree = joined["verdict_13"] == joined["verdict_12"]
    assert (agree.sum(), (joined["verdict_13"] == "same").sum()) == (32, 26)
    turned = joined[joined["verdict_13"].isin(["slower", "faster"]) & ~agree]
    assert len(turned) == 5
    d3a = turned[(turned["workload"] == "conv2d_unet_d3a_bwd_data.cl") & (turned["dtype"] == "fp32")]
    assert list(d3a["verdict_13"]) == ["faster"] and 0.58 < d3a["ratio_13"].iloc[0] < 0.63


@pytest.fixture(scope="module")
def backward_step() -> dict[str, pd.DataFrame]:
    report = RELEASE_ATLAS / "variants-backward-step-report"  # its results: git, 60801c5
    return {name: pd.read_csv(report / f"{name}.csv") for name in ("changes", "verdicts")}


def test_22_of_the_26_later_backward_changes_are_at_9_26_1_1_to_9_27_0_42(
    backward, backward_path, backward_step
):
    # lease 14: bundled, 9.26.1.1 and 9.27.0.42, 3 rounds each on one H200
    verdicts = backward_step["verdicts"]
    verdicts = verdicts.assign(release=_release(verdicts["group"]))
    assert set(verdicts["rounds_baseline"]) == set(verdicts["rounds_candidate"]) == {3}
    changes = backward_step["changes"]
    step = changes[(changes["before"] == "9.26.1.1") & (changes["after"] == "9.27.0.42")]
    assert step["verdict"].value_counts().to_dict() == {"faster": 26, "slower": 16, "same": 6}
    at_9_21 = backward_path["verdicts"][backward_path["verdicts"]["release"] == "9.21.0.82"]
    at_9_26 = verdicts[verdicts["release"] == "9.26.1.1"][["workload", "dtype", "verdict"]]
    joined = (
        _judged_at_9_28_1_4(backward)
        .merge(at_9_21[["workload", "dtype", "verdict"]], on=["workload", "dtype"], suffixes=("_12", "_13"))
        .merge(at_9_26.rename(columns={"verdict": "verdict_26"}), on=["workload", "dtype"])
        .merge(
            step[["workload", "dtype", "verdict", "ratio"]].rename(
                columns={"verdict": "step", "ratio": "step_ratio"}
            ),
            on=["workload", "dtype"],
            how="left",
        )
    )
    assert len(joined) == 68
    later = joined[joined["verdict_13"] == "same"]
    located = later[(later["verdict_26"] == "same") & (later["step"] == later["verdict_12"])]
    assert len(later) == 26 and len(located) == 22
    # the 5 rows that moved one way at 9.21.0.82 moved back at 9.26.1.1 -> 9.27.0.42
    turned = joined[
        joined["verdict_13"].isin(["slower", "faster"]) & (joined["verdict_13"] != joined["verdict_12"])
    ]
    assert len(turned) == 5 and (turned["step"] == turned["verdict_12"]).all()
    d3a = turned[(turned["workload"] == "conv2d_unet_d3a_bwd_data.cl") & (turned["dtype"] == "fp32")]
    assert 6.2 < d3a["step_ratio"].iloc[0] < 6.5


@pytest.fixture(scope="module")
def locate() -> dict[str, pd.DataFrame]:
    return _committed(RELEASE_ATLAS / "locate-a-report")


FIRST_AT_9_21 = {  # lease 15, GPU 0: judged against bundled at 9.21.0.82, its direction
    ("conv2d_unet_mid_b_bwd_weight", "tf32"): "slower",
    ("conv2d_r50_c5_down_bwd_data", "tf32"): "faster",
    ("conv2d_unet_d4a_bwd_weight.cl", "fp16"): "slower",
    ("conv2d_unet_e3a_bwd_weight.cl", "fp16"): "slower",
    ("conv2d_unet_d3a_bwd_weight.cl", "fp16"): "faster",
}


def test_five_rows_first_change_is_by_9_21_0_82_and_none_after_it_to_9_24_0_43(locate, backward_path):
    # lease 15: bundled and the 7 PyPI releases 9.21.0.82 ... 9.24.0.43, 3 rounds each on one H200
    verdicts = locate["verdicts"]
    verdicts = verdicts.assign(release=_release(verdicts["group"]))
    assert set(verdicts["rounds_baseline"]) == set(verdicts["rounds_candidate"]) == {3}
    assert verdicts["release"].nunique() == 7
    changes = locate["changes"]
    at_9_21 = changes[changes["after"] == "9.21.0.82"].set_index(["workload", "dtype"])["verdict"]
    assert {row: at_9_21[row] for row in FIRST_AT_9_21} == FIRST_AT_9_21
    adjacent = changes[changes["before"] != "9.19.0 (bundled)"]
    for row in FIRST_AT_9_21:  # no judged step of theirs between 9.21.0.82 and 9.24.0.43
        assert steps(adjacent, *row) == []
    # lease 13 (another H200) had the four rows other than mid_b `same` at 9.20.0.48, ratios like these
    earlier = backward_path["verdicts"]
    at_9_20 = earlier[earlier["release"] == "9.20.0.48"].set_index(["workload", "dtype"])["verdict"]
    assert all(at_9_20[row] == "same" for row in FIRST_AT_9_21)
    # the two rows with no judged change in the span: e1a fp32 and c3_3x3 tf32
    for row in (("conv2d_unet_e1a_bwd_weight.cl", "fp32"), ("conv2d_r50_c3_3x3_bwd_data", "tf32")):
        assert steps(changes, *row) == []


def test_mid_a_backward_weight_runs_in_two_modes_from_9_23_0_39(locate):
    # its one judged step, 9.22.0.52 -> 9.23.0.39, is the start of windows at ~208 us beside ~171 us
    assert steps(locate["changes"], "conv2d_unet_mid_a_bwd_weight", "tf32") == [
        ("9.22.0.52", "9.23.0.39", "slower")
    ]
    verdicts = locate["verdicts"]
    mid_a = _by_release(verdicts, "conv2d_unet_mid_a_bwd_weight")
    assert mid_a.loc["9.22.0.52", "median_candidate_s"] < 175e-6
    assert mid_a.loc["9.23.0.39", "candidate_s"] > 200e-6
    # at 9.23.1.3 one round of three sits in the fast mode: the median of its rounds is slow, their geometric
    # mean 5 % under it (208 and 197 us)
    at_9_23_1_3 = mid_a.loc["9.23.1.3"]
    assert at_9_23_1_3["median_candidate_s"] > 200e-6 and at_9_23_1_3["candidate_s"] < 0.96 * 208e-6


def test_locate_b_whose_clock_guard_read_another_gpu_judged_nothing():
    # GPU 1 of the same host: its clock guard read GPU 0 (fixed since), bundled has one round: no verdicts
    verdicts = pd.read_csv(RELEASE_ATLAS / "locate-b-report" / "verdicts.csv")
    assert set(verdicts["verdict"]) == {"inconclusive"}


@pytest.fixture(scope="module")
def last_rows() -> dict[str, pd.DataFrame]:
    return _committed(RELEASE_ATLAS / "last-rows-report")


AT_9_25_1_1 = {  # lease 16: judged between the adjacent releases 9.24.1.1 and 9.25.1.1, on GPUs 1 and 2
    ("conv2d_unet_mid_a_bwd_weight", "tf32"): "faster",
    ("conv2d_unet_mid_b_bwd_weight", "tf32"): "faster",
    ("conv2d_r50_c3_3x3_bwd_data", "tf32"): "faster",
}


def test_the_last_backward_steps_are_at_9_24_1_1_to_9_25_1_1_on_two_gpus(last_rows):
    # lease 16: bundled and 9.24.0.43 ... 9.26.1.1, 7 rounds each, the same matrix on two GPUs of one host
    verdicts = last_rows["verdicts"]
    assert set(verdicts["rounds_baseline"]) == set(verdicts["rounds_candidate"]) == {7}
    second = pd.read_csv(RELEASE_ATLAS / "last-rows-g2-report" / "changes.csv")  # GPU 2; its results: git
    for changes in (last_rows["changes"], second):
        adjacent = changes[changes["before"] != "9.19.0 (bundled)"]
        judged = adjacent[adjacent["verdict"].isin(["slower", "faster"])]
        assert {(r.workload, r.dtype): (r.before, r.after, r.verdict) for r in judged.itertuples()} == {
            row: ("9.24.1.1", "9.25.1.1", verdict) for row, verdict in AT_9_25_1_1.items()
        }
        # mid_a and mid_b were slower than bundled up to 9.24.1.1 and no longer from 9.25.1.1
        for row in (("conv2d_unet_mid_a_bwd_weight", "tf32"), ("conv2d_unet_mid_b_bwd_weight", "tf32")):
            assert steps(changes, *row) == [
                ("9.19.0 (bundled)", "9.24.0.43", "slower"),
                ("9.24.1.1", "9.25.1.1", "faster"),
            ]
    # e3a_bwd_data tf32: no step from 9.24.0.43 to 9.26.1.1
    assert steps(last_rows["changes"], "conv2d_unet_e3a_bwd_data", "tf32") == []


def test_e1a_backward_weight_steps_by_4_percent_under_the_threshold(last_rows):
    # 165 -> 158 us at 9.24.1.1 -> 9.25.1.1 (the README: every round of one beyond every round of the other,
    # in the results in git), a step the 5 % rule calls `same`: located, not judged
    verdicts = last_rows["verdicts"]
    medians = _by_release(verdicts, "conv2d_unet_e1a_bwd_weight.cl")["median_candidate_s"]
    assert 0.95 < medians["9.25.1.1"] / medians["9.24.1.1"] < 0.97
    assert steps(last_rows["changes"], "conv2d_unet_e1a_bwd_weight.cl", "fp32") == []


def test_the_undecided_rows_show_no_change_at_the_patch_steps_and_one_between_9_19_1_2_and_9_28_0_42():
    # lease 17: lease 1's 75 rows undecided at a step, its four cells on one H200 (3 to 4 rounds a cell)
    report = RELEASE_ATLAS / "undecided-report"  # its results: git, at the commit the lab's README names
    counts = _step_counts(pd.read_csv(report / "families.csv"))
    assert counts.loc["9.19.1.2"].to_dict() == {"faster": 0, "slower": 0, "same": 67, "undecided": 8}
    assert counts.loc["9.28.1.4"].to_dict() == {"faster": 0, "slower": 0, "same": 73, "undecided": 2}
    assert (counts.loc["9.28.0.42", "faster"], counts.loc["9.28.0.42", "slower"]) == (5, 4)
    # the one change among the 33 rows no lease had followed: U-Net e1b's NHWC bf16 backward-data
    changes = pd.read_csv(report / "changes.csv")
    assert steps(changes, "conv2d_unet_e1b_bwd_data.cl", "bf16") == [("9.19.1.2", "9.28.0.42", "faster")]
    between = (RELEASE_ATLAS / "between-matrix.yaml").read_text()
    assert "conv2d_unet_e1b_bwd_data.cl:bf16" not in between


def _round_medians(results: pd.DataFrame, workload: str, dtype: str) -> pd.Series:
    """Each release's round medians (seconds) of one row; bundled as 'bundled'."""
    rows = results[(results["workload"] == workload) & (results["dtype"] == dtype)]
    return rows.groupby(_release(rows["cell_id"]).fillna("bundled"))["median_s"].agg(list)


@pytest.fixture(scope="module")
def remaining_path(tmp_path_factory) -> dict[str, pd.DataFrame]:
    out = tmp_path_factory.mktemp("remaining-path")
    return _render(RELEASE_ATLAS / "remaining-path", RELEASE_ATLAS / "remaining-path-matrix.yaml", out)


def test_every_release_on_one_h100_locates_e1b_and_the_mid_rows_steps(remaining_path):
    # lease 18: bundled and all 16 PyPI releases from 9.19.1.2 to 9.28.1.4, 5 rounds each, one H100
    verdicts = remaining_path["verdicts"]
    assert set(verdicts["rounds_baseline"]) == set(verdicts["rounds_candidate"]) == {5}
    assert _release(verdicts["group"]).nunique() == 16
    changes = remaining_path["changes"]
    assert steps(changes, "conv2d_unet_e1b_bwd_data.cl", "bf16") == [("9.20.0.48", "9.21.0.82", "faster")]
    # its step back at 9.25.1.1 (0.875x) is no verdict on 5 rounds: the GPU ran two of 9.25.1.1's at two
    # speeds, windows up to 14.8 % apart (issue 62; lease 16's 7 rounds a release judge it faster)
    assert steps(changes, "conv2d_unet_mid_b_bwd_weight", "tf32") == [("9.20.0.48", "9.21.0.82", "slower")]
    assert steps(changes, "conv2d_unet_mid_a_bwd_weight", "tf32") == [("9.24.1.1", "9.25.1.1", "faster")]
    # mid_a's slow mode (~210 us against ~172): one round of five at 9.22.0.52, every round from 9.23.0.39 to
    # 9.24.1.1, none from 9.25.1.1
    mid_a = _round_medians(remaining_path["results"], "conv2d_unet_mid_a_bwd_weight", "tf32")
    slow = {release: sum(t > 200e-6 for t in times) for release, times in mid_a.items()}
    assert slow["9.22.0.52"] == 1 and slow["9.25.1.1"] == 0
    assert all(slow[r] == 5 for r in ("9.23.0.39", "9.23.1.3", "9.23.2.1", "9.24.0.43", "9.24.1.1"))


def test_the_mid_rows_later_rise_is_two_steps_each_under_the_threshold(remaining_path):
    # against bundled, mid_b is slower at 9.28.1.4 (1.059); no adjacent step after 9.25.1.1 is judged a
    # change: it rose at 9.26.1.1 -> 9.27.0.42 and at 9.27.0.42 -> 9.28.0.42, each under 5 %
    results = remaining_path["results"]
    verdicts = remaining_path["verdicts"]
    assert _by_release(verdicts, "conv2d_unet_mid_b_bwd_weight").loc["9.28.1.4", "verdict"] == "slower"
    for workload in ("conv2d_unet_mid_a_bwd_weight", "conv2d_unet_mid_b_bwd_weight"):
        median = _round_medians(results, workload, "tf32").map(statistics.median)
        first, second = median["9.27.0.42"] / median["9.26.1.1"], median["9.28.0.42"] / median["9.27.0.42"]
        assert 1.0 < first < 1.05 and 1.0 < second < 1.05 and first * second > 1.03
        later = [step for step in steps(remaining_path["changes"], workload, "tf32") if step[0] >= "9.25.1.1"]
        assert later == []


def test_7_rounds_judge_the_rows_3_to_4_rounds_left_undecided():
    # lease 18's second run: lease 17's 11 undecided rows in the atlas's four cells, 7 rounds each, one H100
    ends = _committed(
        RELEASE_ATLAS / "remaining-ends-report", ("verdicts", "families", "changes")
    )  # results: 679a6b7
    assert set(ends["verdicts"]["rounds_candidate"]) == {7}
    counts = _step_counts(ends["families"])
    assert counts.loc["9.19.1.2"].to_dict() == {"faster": 0, "slower": 0, "same": 11, "undecided": 0}
    assert counts.loc["9.28.0.42"].to_dict() == {"faster": 0, "slower": 2, "same": 9, "undecided": 0}
    assert counts.loc["9.28.1.4"].to_dict() == {"faster": 0, "slower": 0, "same": 9, "undecided": 2}
    changed = {(r.workload, r.dtype) for r in ends["changes"].itertuples() if r.verdict == "slower"}
    assert changed == {("conv2d_unet_d4a", "fp32"), ("conv2d_unet_e4b", "fp32")}


def test_d4a_and_e4b_change_at_the_atlas_two_steps(tmp_path):
    # lease 18's third run: the two rows at bundled, 9.19.1.2, 9.20.0.48, 9.21.0.82, 9.26.1.1, 9.27.0.42 and
    # 9.28.0.42, 4 rounds; lease 19: e4b at 9.26.1.1 and 9.27.0.42 alone, 6 rounds, another H100
    # against bundled no row is judged slower: 9.27.0.42 and 9.28.0.42 run in two modes (exit 0, undecided)
    around = _render(
        RELEASE_ATLAS / "step-d4a-e4b", RELEASE_ATLAS / "step-d4a-e4b-matrix.yaml", tmp_path / "around", 0
    )
    changes = around["changes"]
    assert steps(changes, "conv2d_unet_d4a", "fp32") == [
        ("9.20.0.48", "9.21.0.82", "faster"),
        ("9.26.1.1", "9.27.0.42", "slower"),
    ]
    assert steps(changes, "conv2d_unet_e4b", "fp32") == [("9.20.0.48", "9.21.0.82", "faster")]
    for workload in ("conv2d_unet_d4a", "conv2d_unet_e4b"):  # the same time at 9.21.0.82 and 9.26.1.1
        rounds = _round_medians(around["results"], workload, "fp32")
        assert abs(sum(rounds["9.26.1.1"]) / sum(rounds["9.21.0.82"]) - 1) < 0.002
    alone = _render(RELEASE_ATLAS / "step-e4b", RELEASE_ATLAS / "step-e4b-matrix.yaml", tmp_path / "alone")
    verdict = alone["verdicts"].iloc[0]
    assert (verdict["verdict"], verdict["rounds_candidate"]) == ("slower", 6)
    assert 1.10 < verdict["ratio"] < 1.20

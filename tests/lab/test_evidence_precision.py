"""The committed evidence of issue 58 (the lab's precision-modes, host-cudnn-h200 and torch-defaults):
what their READMEs claim holds, re-derived from the results. One H200, torch
2.11.0+cu130 (and PyPI's 2.14.1 and 2.15.0 in environments of their own), suite 0.20."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import run_cli
from tests.evidence import HOST_CUDNN_H200, MAIN_JOB_H200, PRECISION_MODES, TORCH_DEFAULTS

# the lab's claims (tests/lab/); each renders committed GPU results: seconds each
pytestmark = [pytest.mark.lab, pytest.mark.slow]


def _render(results: Path, matrix: Path, out: Path) -> dict[str, pd.DataFrame]:
    """Render a lease's results (each holds slower rows against its baseline: exit 1)."""
    done = run_cli("report", "--results", str(results), "--matrix", str(matrix), "--out", str(out))
    assert done.returncode == 1, done.stdout + done.stderr
    found = (name for name in ("verdicts", "changes") if (out / f"{name}.csv").exists())  # changes: a series
    return {name: pd.read_csv(out / f"{name}.csv") for name in found}


@pytest.fixture(scope="module")
def step_a(tmp_path_factory) -> dict[str, pd.DataFrame]:
    return _render(
        PRECISION_MODES / "step-a", PRECISION_MODES / "step-a-matrix.yaml", tmp_path_factory.mktemp("step-a")
    )


@pytest.fixture(scope="module")
def step_b(tmp_path_factory) -> dict[str, pd.DataFrame]:
    return _render(
        PRECISION_MODES / "step-b", PRECISION_MODES / "step-b-matrix.yaml", tmp_path_factory.mktemp("step-b")
    )


def _row(verdicts: pd.DataFrame, workload: str, dtype: str) -> dict[str, tuple[str, float]]:
    """A row's verdict and ratio against bundled, by cuDNN release."""
    mine = verdicts[(verdicts["workload"] == workload) & (verdicts["dtype"] == dtype)]
    releases = mine["group"].str.extract(r"wheel-([\d.]+)_")[0]
    found = zip(releases, mine["verdict"], mine["ratio"], strict=True)
    return {release: (verdict, round(float(ratio), 3)) for release, verdict, ratio in found}


def test_every_measurement_records_the_math_flags_its_mode_asks_for() -> None:
    """fp32_default ran with torch 2.11's own flags (TF32 in cuDNN, not in matrix products), fp32 with TF32
    off."""
    seen: dict[str, set[tuple[bool, bool]]] = {}
    paths = [
        *PRECISION_MODES.glob("step-*/*.json.gz"),
        *HOST_CUDNN_H200.glob("host-cudnn/*.json.gz"),
        *TORCH_DEFAULTS.glob("t21*/*.json.gz"),
    ]
    for path in sorted(paths):
        with gzip.open(path) as f:
            for m in json.load(f)["measurements"]:
                flags = m["math_flags"]
                pair = (flags["cudnn_allow_tf32"], flags["matmul_allow_tf32"])
                seen.setdefault(m["dtype"], set()).add(pair)
    assert seen["fp32_default"] == {(True, False)}
    assert seen["fp32"] == {(False, False)}
    assert seen["bf16"] == {(False, False)}  # the suite's bf16 rows set TF32 off for what stays in fp32


def test_the_resnet50_step_changes_only_with_tf32_off(step_a, step_b) -> None:
    """The atlas's headline (1.35x slower from 9.21.0.82 to 9.26.1.1) holds with TF32 off; under PyTorch's
    defaults and with bf16 AMP the step is the same at every release measured."""
    verdicts = pd.concat([step_a["verdicts"], step_b["verdicts"]])
    off = _row(verdicts, "train_resnet50", "fp32")
    assert off["9.20.0.48"][0] == "same"
    for release in ("9.21.0.82", "9.26.1.1"):
        assert off[release][0] == "slower" and 1.35 <= off[release][1] <= 1.38
    assert off["9.27.0.42"][0] == off["9.28.1.4"][0] == "same"
    for dtype in ("fp32_default", "bf16"):
        row = _row(verdicts, "train_resnet50", dtype)
        assert set(row) == {"9.20.0.48", "9.21.0.82", "9.26.1.1", "9.27.0.42", "9.28.1.4"}
        assert {v for v, _ in row.values()} == {"same"}, (dtype, row)
    for dtype in ("fp32_default", "fp32", "bf16"):
        assert {v for v, _ in _row(verdicts, "train_transformer_block", dtype).values()} == {"same"}


def test_the_layers_behind_the_tf32_off_step_are_the_same_under_torch_defaults(step_a) -> None:
    """The weight-gradient layers that make the TF32-off step slower at 9.21.0.82 do not move under PyTorch's
    defaults; the 3x3 data gradient moves far less (2.72x with TF32 off, 1.13x on defaults)."""
    verdicts = step_a["verdicts"]
    weight_grads = (("conv2d_r50_c2_expand_bwd_weight", 9.0), ("conv2d_r50_c3_reduce1_bwd_weight", 4.5))
    for workload, least in weight_grads:
        assert _row(verdicts, workload, "fp32")["9.21.0.82"][0] == "slower"
        assert _row(verdicts, workload, "fp32")["9.21.0.82"][1] >= least
        assert _row(verdicts, workload, "fp32_default")["9.21.0.82"][0] == "same"
    data = "conv2d_r50_c3_3x3_bwd_data"
    assert _row(verdicts, data, "fp32")["9.21.0.82"] == ("slower", pytest.approx(2.72, abs=0.02))
    assert _row(verdicts, data, "fp32_default")["9.21.0.82"] == ("slower", pytest.approx(1.13, abs=0.01))


def test_the_9_28_layer_changes_the_atlas_names_are_tf32_off_changes(step_b) -> None:
    """At 9.28.1.4 the TF32-off changes the README quoted (c3_3x3 2.14x, 3x3 0.49x, d3a data-grad 3.85x) are
    same, slightly faster and same under torch's defaults; U-Net e4a moves on defaults at 9.26.1.1 alone."""
    verdicts = step_b["verdicts"]
    expect = {
        "conv2d_r50_c3_3x3": ("slower", "same"),
        "conv2d_r50_3x3": ("faster", "faster"),
        "conv2d_unet_d3a_bwd_data": ("slower", "same"),
    }
    for workload, (off, default) in expect.items():
        assert _row(verdicts, workload, "fp32")["9.28.1.4"][0] == off
        assert _row(verdicts, workload, "fp32_default")["9.28.1.4"][0] == default
    assert _row(verdicts, "conv2d_r50_3x3", "fp32")["9.28.1.4"][1] < 0.5
    assert 0.9 < _row(verdicts, "conv2d_r50_3x3", "fp32_default")["9.28.1.4"][1] < 0.95
    e4a = _row(verdicts, "conv2d_unet_e4a", "fp32_default")
    assert e4a["9.26.1.1"][0] == "slower" and e4a["9.27.0.42"][0] == e4a["9.28.1.4"][0] == "same"


def test_the_host_question_keeps_pytorchs_cudnn(tmp_path) -> None:
    """On the H200, NVIDIA's system 9.14 is the same as PyTorch's bundled 9.19.0.56 on every row of the
    default matrix; PyPI's 9.28.1.4 is slower on the small CNN's bf16 step and on bf16 attention."""
    verdicts = _render(HOST_CUDNN_H200 / "host-cudnn", HOST_CUDNN_H200 / "matrix.yaml", tmp_path)["verdicts"]
    system = verdicts[verdicts["group"].str.contains("system")]
    assert len(system) == 22 and set(system["verdict"]) == {"same"}
    newest = verdicts[verdicts["group"].str.contains("9.28.1.4")]
    slower = newest[newest["verdict"] == "slower"]
    assert sorted(zip(slower["workload"], slower["dtype"], strict=True)) == [
        ("sdpa", "bf16"),
        ("train_small_cnn", "bf16"),
    ]


def test_the_main_job_on_a_gpu_host_asks_the_hosts_question(tmp_path) -> None:
    """The README's main job on the H200: bundled against NVIDIA's system 9.14.0, PyPI's newest left out (no
    network) and disabled left out (CPU only), each named; every row same, and the first screen keeps
    PyTorch's cuDNN in the modes that ran."""
    folder = MAIN_JOB_H200
    plan = json.loads((folder / "main-job" / "plan.json").read_text())
    why = {json.dumps(entry["cell"]["cudnn"]): entry["why"] for entry in plan["left_out"]}
    assert why['{"wheel": "newest"}'].startswith("the package index is not reachable")
    assert why['"disabled"'].startswith("only where the suite runs on the CPU")
    assert [c["how"] for c in plan["chosen"]] == ["9.14.0 in /lib/x86_64-linux-gnu"]
    done = run_cli(
        "report",
        "--results",
        str(folder / "main-job"),
        "--matrix",
        str(folder / "matrix.yaml"),
        "--out",
        str(tmp_path),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    verdicts = pd.read_csv(tmp_path / "verdicts.csv")
    assert len(verdicts) == 22 and set(verdicts["verdict"]) == {"same"}
    first = (tmp_path / "report.md").read_text().split("## Scorecard")[0]
    assert "for these 22 rows in fp32 (torch defaults) and bf16: **keep PyTorch's cuDNN 9.19.0**" in first
    assert "NVIDIA's system cuDNN 9.14.0**: the same in 22 rows" in first


# What each torch build pinned and loaded: torch, CUDA runtime, cuDNN, NCCL.
BUILDS = {
    "t214": ("2.14.1", "2.14.1+cu130", "13.0", "9.24.0", "nvidia-cudnn-cu13==9.24.0.43"),
    "t215": ("2.15.0", "2.15.0+cu132", "13.2", "9.26.0", "nvidia-cudnn-cu13==9.26.0.51"),
}


@pytest.mark.parametrize("build", sorted(BUILDS))
def test_each_torch_build_ran_in_its_own_environment_with_what_it_pins(build) -> None:
    torch, version, cuda, cudnn, pin = BUILDS[build]
    docs = []
    for path in sorted((TORCH_DEFAULTS / build).glob("*.json.gz")):
        with gzip.open(path) as f:
            docs.append(json.load(f))
    builds = [d for d in docs if d["cell"]["torch"] == torch]
    assert len(builds) >= 3 and all(d["status"] == "ok" for d in docs)
    for doc in builds:
        assert (doc["environment"]["torch"]["version"], doc["environment"]["torch"]["cuda"]) == (
            version,
            cuda,
        )
        assert doc["cudnn"]["verified"] and doc["cudnn"]["runtime_version"] == cudnn
        assert doc["nccl"]["verified"] and doc["nccl"]["runtime_version"] == "2.30.7"
        assert pin in doc["run"]["environment"]["distributions"]
    anchors = [d for d in docs if d["cell"]["torch"] == "installed"]
    assert {d["environment"]["torch"]["version"] for d in anchors} == {"2.11.0+cu130"}


@pytest.mark.parametrize("build", sorted(BUILDS))
def test_a_torch_builds_resnet50_step_changes_only_with_tf32_off(build, tmp_path) -> None:
    """torch 2.14.1's and 2.15.0's ResNet-50 step is 1.37x slower than 2.11.0's with TF32 off, as their cuDNN
    pins make it; on PyTorch's defaults and with bf16 AMP it is the same, and so are the layers behind it."""
    verdicts = _render(TORCH_DEFAULTS / build, TORCH_DEFAULTS / f"{build}-matrix.yaml", tmp_path)["verdicts"]
    got = {(r.workload, r.dtype): (r.verdict, float(r.ratio)) for r in verdicts.itertuples()}
    assert len(got) == 12
    verdict, ratio = got[("train_resnet50", "fp32")]
    assert verdict == "slower" and 1.35 <= ratio <= 1.39
    for (workload, dtype), (verdict, ratio) in got.items():
        if workload.startswith("conv2d"):
            assert verdict == ("slower" if dtype == "fp32" else "same"), (workload, dtype, verdict)
        elif (workload, dtype) != ("train_resnet50", "fp32"):
            assert verdict == "same" and 0.97 <= ratio <= 1.01, (workload, dtype, verdict, ratio)

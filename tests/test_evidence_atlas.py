"""The committed evidence of issue 40's later leases: what their READMEs claim holds, re-derived from the
results (reports/release-atlas second-interval and resnet-step; reports/torch-build-docker)."""

from __future__ import annotations

import pandas as pd
import pytest

from harness.results import documents
from tests.conftest import REPO, run_cli

ATLAS = REPO / "reports" / "release-atlas"
DOCKER = REPO / "reports" / "torch-build-docker"


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> dict[str, pd.DataFrame]:
    """Each lease's changes.csv and verdicts.csv, rendered now from its committed results."""
    changes = {}
    for lease in ("second-interval", "resnet-step"):
        out = tmp_path_factory.mktemp(lease)
        done = run_cli(
            "report",
            "--results",
            str(ATLAS / lease),
            "--matrix",
            str(ATLAS / f"{lease}-matrix.yaml"),
            "--out",
            str(out),
        )
        assert done.returncode == 1, done.stderr  # both hold slower rows against the bundled baseline
        changes[lease] = pd.read_csv(out / "changes.csv")
        changes[f"{lease} verdicts"] = pd.read_csv(out / "verdicts.csv")
    return changes


def steps(changes: pd.DataFrame, workload: str, dtype: str) -> list[tuple[str, str, str]]:
    rows = changes[(changes["workload"] == workload) & (changes["dtype"] == dtype)]
    return [(r.before, r.after, r.verdict) for r in rows.itertuples() if r.verdict in ("slower", "faster")]


def test_the_six_changes_between_9_24_and_9_26_each_began_between_adjacent_releases(rendered):
    changes = rendered["second-interval"]
    at_9_25 = ("9.24.1.1", "9.25.1.1", "slower")
    at_9_26 = ("9.25.1.1", "9.26.0.51")
    assert steps(changes, "conv2d_r50_c3_reduce1_bwd_data", "fp32") == [at_9_25]
    assert steps(changes, "conv2d_r50_c3_reduce_bwd_data", "fp32") == [at_9_25]
    assert steps(changes, "conv2d_unet_e2a_bwd_data", "fp32") == [at_9_25]
    assert steps(changes, "conv2d_r50_7x7s2.cl", "bf16") == [(*at_9_26, "faster")]
    assert steps(changes, "conv2d_unet_e1a.cl", "bf16") == [(*at_9_26, "faster")]
    # changed twice: already slower than bundled at 9.24.0.43, then again at 9.26.0.51
    assert steps(changes, "conv2d_unet_e4a.cl", "bf16") == [
        ("9.19.0 (bundled)", "9.24.0.43", "slower"),
        (*at_9_26, "slower"),
    ]


def test_the_resnet_step_is_slower_from_9_21_0_82_and_back_at_9_27_0_42(rendered):
    assert steps(rendered["resnet-step"], "train_resnet50", "fp32") == [
        ("9.20.0.48", "9.21.0.82", "slower"),
        ("9.24.0.43", "9.27.0.42", "faster"),
    ]
    # lease 5 holds 9.24.0.43 .. 9.26.1.1: the step is slower than bundled at each, and changes at none
    verdicts = rendered["second-interval verdicts"]
    step = verdicts[(verdicts["workload"] == "train_resnet50") & (verdicts["dtype"] == "fp32")]
    assert len(step) == 5 and set(step["verdict"]) == {"slower"}
    assert step["ratio"].between(1.3, 1.4).all()
    assert steps(rendered["second-interval"], "train_resnet50", "fp32") == [
        ("9.19.0 (bundled)", "9.24.0.43", "slower")
    ]


def test_the_docker_cell_built_its_torch_from_the_wheelhouse_and_agrees_with_local():
    for side, backend in (("docker", "docker"), ("local", "local")):
        loaded = documents.load(DOCKER / side)
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
    done = run_cli("compare", str(DOCKER / "local"), str(DOCKER / "docker"))
    assert done.returncode == 0, done.stderr
    assert "0 slower, 0 faster, 14 same, 1 inconclusive" in done.stdout

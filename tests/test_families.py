"""The atlas: layer families declared as data, and reports that sum a release up by family and model."""

from __future__ import annotations

import csv
import io
import json
import re

import pandas as pd
import pytest

from harness import schemas
from harness.report.analysis import families
from harness.suite.catalog import CATALOG, for_profile
from harness.suite.workloads import layers
from tests.conftest import run_cli
from tests.evidence import RELEASE_ATLAS


def test_the_layer_tables_hold_each_networks_distinct_layers_once():
    for network in layers.NETWORKS:
        names = [layer.name for layer in network.convs]
        shapes = [layer[1:] for layer in network.convs]
        assert len(set(names)) == len(names), network.title
        assert len(set(shapes)) == len(shapes), f"{network.title} lists one shape twice"
    r50 = {layer.name: layer for layer in layers.RESNET50.convs}
    assert len(r50) == 23  # the stem, stage 2's four, and six in each of stages 3 to 5
    for stage in (3, 4, 5):  # a strided stage halves its input: its later layers run at half the size
        first, later = r50[f"c{stage}_3x3s2"], r50[f"c{stage}_3x3"]
        assert first.stride == 2 and later.stride == 1 and later.hw == first.hw // 2
        assert r50[f"c{stage}_down"].cout == r50[f"c{stage}_expand"].cout == 4 * first.cout
    assert len(layers.UNET.convs) == 14 and {layer.k for layer in layers.UNET.convs} == {3}


def test_the_atlas_measures_every_layer_at_every_pass_and_layout():
    atlas = set(for_profile("atlas"))
    for network in layers.NETWORKS:
        for layer in network.convs:
            base = f"conv2d_{network.key}_{layer.name}"
            ids = {f"{base}{p}{lay}" for p in ("", "_bwd_data", "_bwd_weight") for lay in ("", ".cl")}
            assert ids <= atlas, base
            spec = CATALOG[base]
            assert (spec.params["cin"], spec.params["cout"], spec.params["stride"]) == (
                layer.cin,
                layer.cout,
                layer.stride,
            )
            assert spec.params["pad"] == layer.k // 2 and spec.params["batch"] == network.batch
            assert spec.summary_group == "conv forward NCHW"
            assert CATALOG[f"{base}_bwd_weight.cl"].summary_group == "conv backward-weight NHWC"
    # the suite's older ids name the same computation as before the atlas, in the same profiles
    earlier = {"conv2d_r50_3x3": (64, 64, 3, 1, 1, 56), "conv2d_r50_1x1": (256, 64, 1, 1, 0, 56)}
    for workload, shape in earlier.items():
        params = CATALOG[workload].params
        assert tuple(params[k] for k in ("cin", "cout", "k", "stride", "pad", "hw")) == shape
    assert "conv2d_r50_3x3" in for_profile("smoke") and "conv2d_r50_3x3_bwd_data.cl" in for_profile("default")
    assert "conv2d_r50_c3_3x3" not in for_profile("default")  # the atlas's layers cost a release sweep only


def test_the_atlas_has_its_model_rows_and_each_family():
    atlas = for_profile("atlas")
    assert {"train_resnet50", "train_transformer_block"} <= set(atlas)
    groups = {CATALOG[w].summary_group for w in atlas}
    assert {
        "model",
        "attention forward",
        "attention backward",
        "batch norm forward",
        "layer norm backward",
        "gemm, transformer block",
        "pooling",
        "rnn",
    } <= groups
    for seq in layers.TRANSFORMER.seq_lens:
        assert f"layernorm_tb_s{seq}" in atlas and f"gemm_tb_s{seq}_qkv" in atlas
    assert all(families.family_of(w) == f"model: {w}" for w in atlas if w.startswith("train_"))
    assert families.family_of("no_such_workload") == "other"


def _row(workload: str, verdict: str, ratio: float, ran: str = "same") -> dict[str, object]:
    return {
        "workload": workload,
        "dtype": "fp32",
        "knobs": "k",
        "verdict": verdict,
        "ratio": ratio,
        "what_ran": ran,
    }


def test_a_family_line_counts_each_way_and_keeps_models_apart():
    verdicts = pd.DataFrame(
        [
            _row("conv2d_r50_3x3", "faster", 0.49, "changed"),
            _row("conv2d_r50_c3_3x3", "slower", 2.1, "changed"),
            _row("conv2d_r50_c4_3x3", "slower", 1.3, "changed"),
            _row("conv2d_unet_e1b", "same", 1.0),
            _row("conv2d_unet_e2b", "inconclusive", 1.04),
            _row("train_resnet50", "same", 1.014, "changed"),
            _row("gemm", "same", 1.0),
        ]
    )
    lines = families.summarize(verdicts, "9.28.0.42", "9.19.1.2")
    assert lines[0].family == "model: train_resnet50"  # model rows first
    conv = next(line for line in lines if line.family == "conv forward NCHW")
    assert (conv.rows, conv.faster, conv.slower, conv.same, conv.undecided, conv.ran_changed) == (
        5,
        1,
        2,
        1,
        1,
        3,
    )
    assert conv.both_ways and conv.fastest == families.Extreme("conv2d_r50_3x3", 0.49)
    assert conv.slowest == families.Extreme("conv2d_r50_c3_3x3", 2.1)
    assert conv.words().startswith(
        "conv forward NCHW fp32 (TF32 off): 1 of 5 rows faster (largest 0.490 (conv2d_r50_3x3)), 2 slower"
    )
    assert lines[0].words() == "model: train_resnet50 fp32 (TF32 off): same, ratio 1.014, other kernels"
    gemm = next(line for line in lines if line.family == "gemm, square")
    assert not gemm.changed and not gemm.both_ways


@pytest.fixture(scope="module")
def atlas_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("atlas-report")
    done = run_cli("report", "--results", str(RELEASE_ATLAS / "results"), "--out", str(out))
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]  # rows slower: a regression
    return out


@pytest.mark.slow
def test_the_atlas_report_leads_with_its_families_and_models(atlas_report):
    page = (atlas_report / "report.md").read_text()
    first = page.index("## By family")
    assert first < page.index("## Across cuDNN releases") < page.index("## Read this first")
    section = page[first : page.index("## Across cuDNN releases")]
    # rows of one family moved both ways at 9.28.0.42, and the first screen says so
    assert "**Rows of one family moved both ways**" in section
    assert re.search(
        r"9\.28\.0\.42: conv forward NCHW fp32 \(TF32 off\\?\) \(\d+ faster, \d+ slower of 37\\?\)", section
    )
    across = page[page.index("## Across cuDNN releases") :].splitlines()
    body = [line for line in across if line.startswith("| ") and not line.startswith("| ---")][1:5]
    assert [line.split(" | ")[0].strip("| ") for line in body] == ["train_resnet50"] * 2 + [
        "train_transformer_block"
    ] * 2
    assert "**By family**" in (atlas_report / "summary.md").read_text()


@pytest.mark.slow
def test_the_atlas_family_counts_agree_with_its_verdicts(atlas_report):
    verdict = json.loads((atlas_report / "verdict.json").read_text())
    assert schemas.problems("verdict", verdict, "verdict.json") == []
    assert {line["compared"] for line in verdict["series"]["families"]} == {
        "9.19.1.2",
        "9.28.0.42",
        "9.28.1.4",
    }
    # each candidate against the baseline, counted again here from verdicts.csv
    table = pd.read_csv(atlas_report / "verdicts.csv", keep_default_na=False)
    table = table[table["verdict"] != ""]
    group_of = {group["label"]: group["id"] for group in verdict["groups"]}
    assert {line["compared"] for line in verdict["families"]} == set(group_of) - {"installed / cuDNN bundled"}
    for line in verdict["families"]:
        mine = table[(table["group"] == group_of[line["compared"]]) & (table["dtype"] == line["dtype"])]
        mine = mine[mine["workload"].map(families.family_of) == line["family"]]
        assert len(mine) == line["rows"], line
        for word in ("faster", "slower", "same", "failed"):
            assert int((mine["verdict"] == word).sum()) == line[word], (line, word)
    rows = list(csv.DictReader(io.StringIO((atlas_report / "families.csv").read_text())))
    assert len(rows) == len(verdict["families"]) + len(verdict["series"]["families"])
    # the atlas ran before suite 0.20: its fp32 is TF32 off, and every line names it so beside its id
    named = {(line["dtype"], line["mode"]) for line in [*verdict["families"], *rows]}
    assert named == {("fp32", "fp32 (TF32 off)"), ("bf16", "bf16")}
    changes = list(csv.DictReader(io.StringIO((atlas_report / "changes.csv").read_text())))
    assert changes and all(row["family"] == families.family_of(row["workload"]) for row in changes)


def test_the_default_profile_measures_the_networks_layers_in_the_ways_their_users_train():
    from harness.suite.catalog import rows_of
    from harness.suite.contract import ALL_DTYPES
    from harness.suite.workloads.layers import DEFAULT

    rows = set(rows_of((), "default", ALL_DTYPES))
    for network, layer in DEFAULT.convs:
        for suffix in ("", "_bwd_data", "_bwd_weight"):
            nchw, cl = f"conv2d_{network}_{layer}{suffix}", f"conv2d_{network}_{layer}{suffix}.cl"
            assert {(nchw, "fp32_default"), (nchw, "fp32"), (cl, "bf16")} <= rows
            assert not {(nchw, "bf16"), (cl, "fp32"), (nchw, "tf32"), (cl, "fp16")} & rows
    for workload in (
        "sdpa_s4096_bwd",
        "gemm_tb_s1024_qkv",
        "layernorm_tb_s4096_bwd",
        "batchnorm2d_r50_2048x7",
    ):
        assert [d for w, d in rows if w == workload] == list(DEFAULT.dtypes)
    for workload in ("conv2d_r50_3x3.cl", "train_resnet50", "train_transformer_block", "gemm"):
        assert {d for w, d in rows if w == workload} == set(ALL_DTYPES)  # the rows it had before
    assert "conv2d_r50_c3_3x3" not in {w for w, _ in rows}  # the rest of the atlas: a release sweep only
    # only the default profile narrows; a matrix that names a workload gets every dtype it asks for
    assert ("conv2d_r50_c4_3x3.cl", "fp32") in rows_of((), "full", ALL_DTYPES)
    assert ("conv2d_r50_c4_3x3.cl", "fp32") in rows_of(("conv2d_r50_c4_3x3.cl",), "default", ALL_DTYPES)
    supported = [(w, d) for w, d in rows if d in CATALOG[w].dtypes]
    layer_rows = 6 * len(DEFAULT.convs) + 2 * len(DEFAULT.batchnorms) + len(DEFAULT.pools) + 3 + 8 + 4
    assert len(supported) - sum(d == "fp32_default" for _, d in supported) == 256 + layer_rows == 319
    # suite 0.20: fp32 (torch defaults) beside every fp32 row the generic workloads had (62) and the NCHW
    # convolutions' 3 passes (21)
    assert sum(d == "fp32_default" for _, d in supported) == 62 + 3 * len(DEFAULT.convs) == 83

"""The in-cell suite: its isolation, its statistics, its cuDNN probe, and a real run on CPU torch."""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import itertools
import json
import math
import os
import shutil
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from harness.suite.numerics import check
from harness.suite.probes import cudnn
from harness.suite.timing import graphs, measure, share
from harness.suite.timing import timer as timing
from harness.suite.timing.measure import Sampling
from tests.conftest import REPO, harness_env

SUITE = REPO / "harness" / "suite"


def test_suite_imports_only_torch_stdlib_and_itself():
    # torch and the standard library; NVML (nvidia-ml-py) and torchvision only where present (optional)
    allowed = set(sys.stdlib_module_names) | {"torch", "__future__", "pynvml", "torchvision"}
    for path in SUITE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):  # imports for the type checker only never run in the cell's Python
            if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
                node.body = []
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            for name in names:
                top = name.split(".")[0]
                assert top in allowed or name.startswith("harness.suite"), f"{path}: imports {name}"


def test_summarize_matches_the_statistics_module():
    samples = [3.0, 1.0, 2.0, 5.0, 4.0]
    stats = measure.summarize(samples)
    assert stats["n"] == 5 and stats["min"] == 1.0 and stats["max"] == 5.0
    assert stats["median"] == 3.0 and stats["q1"] == 2.0 and stats["q3"] == 4.0
    assert stats["stdev"] == pytest.approx(statistics.stdev(samples))
    assert stats["rel_iqr"] == pytest.approx(2.0 / 3.0)


def _last_ask(owed_s: float, time_budget_s: float, min_loop_share: float) -> share.ShareAsk:
    """What a process asks of its last measurement, aiming at a 1:1 ratio of timed to untimed time."""
    return share.ShareAsk(owed_s, 1.0, 1.0, time_budget_s, min_loop_share, last=True)


class _Clock:
    """The clock the sampling loop reads (``time.perf_counter``), moved by the timed call alone (and a
    microsecond a reading): what the loop decides is then the same on a quiet host and a busy one."""

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        self.now += 1e-6
        return self.now

    def perf_counter_ns(self) -> int:
        return int(self.perf_counter() * 1e9)

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> _Clock:
    """The sampling loop's clock, moved by the test's calls alone (``_Clock``)."""
    moved = _Clock()
    monkeypatch.setattr(time, "perf_counter", moved.perf_counter)
    monkeypatch.setattr(time, "perf_counter_ns", moved.perf_counter_ns)
    return moved


def test_measure_on_cpu_keeps_raw_samples_and_says_why_it_stopped(clock):
    # every length below is on the loop's own clock, which the calls move (``clock``), never a host's
    calls = []
    result = measure.measure(lambda: calls.append(1), timing.Timer("cpu"), time_budget_s=0.01).to_json()
    assert result["timer"] == "perf_counter" and not result["launch_latency_hidden"]
    assert len(result["samples_s"]) == result["stats"]["n"] >= measure.MIN_SAMPLES
    assert result["stop_reason"] in ("noise_target", "time_budget", "max_samples")
    host_calls = len(calls) - (1 + result["warmup_calls"] + result["stats"]["n"])
    assert host_calls >= timing.HOST_BLOCKS  # the host-time metric's blocks of back-to-back calls
    assert 0 < result["host_time_per_call_s"] < 0.01
    assert result["host_enqueue_s"] is None and result["launch_block_s"] is None  # GPU-only fields
    # a floor a process asked for ends sampling once it is in, however noisy the samples
    noisy = itertools.cycle([1e-4, 5e-4])
    ask = _last_ask(0.3, 5.0, 0.0)
    floored = measure.measure(
        lambda: clock.sleep(next(noisy)), timing.Timer("cpu"), 0.3, 0.01, Sampling(ask=ask)
    ).to_json()
    timed = sum(floored["samples_s"])
    assert floored["stop_reason"] == "timed_floor" and floored["timed_floor_s"] <= timed < 0.5
    # the loop's own share sets the floor: the untimed time between samples is outweighed too
    assert floored["timed_floor_s"] == pytest.approx(ask.at(timed / floored["sampling_wall_s"])[0], rel=0.05)
    assert floored["timed_floor_s"] > 0.3
    # a loop its samples fill less than the process can lengthen: cut short at SHORT_LOOP_S of timed work
    ask = _last_ask(4.0, 5.0, 1.01)
    short = measure.measure(
        lambda: clock.sleep(next(noisy)), timing.Timer("cpu"), 0.5, 0.01, Sampling(ask=ask)
    ).to_json()
    assert "timed_floor_s" not in short and short["stop_reason"] == "short_loop"
    assert sum(short["samples_s"]) >= share.SHORT_LOOP_S
    # at the first sample past SHARE_CHECK_S, when the loop has a share of its own; not the 0.5 s budget
    assert measure.SHARE_CHECK_S <= short["sampling_wall_s"] < 0.4
    # a floor under the matrix's min_time_s rules too (suite 0.11): the loop stops at it, not at the
    # matrix's lengths, though never before SHORT_LOOP_S of timed work
    ask = _last_ask(0.005, 2.0, 0.0)
    kept = measure.measure(
        lambda: clock.sleep(next(noisy)), timing.Timer("cpu"), 2.0, 1.0, Sampling(ask=ask)
    ).to_json()
    assert kept["stop_reason"] == "timed_floor" and kept["timed_floor_s"] < share.SHORT_LOOP_S
    assert share.SHORT_LOOP_S <= sum(kept["samples_s"]) < 0.3
    # one window of a row timed in three: never before its part of SHORT_LOOP_S
    ask = _last_ask(0.005, 2.0, 0.0)._replace(part=1 / 3)
    part = measure.measure(
        lambda: clock.sleep(next(noisy)), timing.Timer("cpu"), 2.0, 1.0, Sampling(ask=ask)
    ).to_json()
    assert part["stop_reason"] == "timed_floor"
    assert share.SHORT_LOOP_S / 3 <= sum(part["samples_s"]) < share.SHORT_LOOP_S


class _PowerLimitedGpu:
    """NVML's answers for a GPU whose power limit holds its clock at 1590 MHz while the rest between
    samples is under ``enough_rest`` of a sample (never, where that is None)."""

    available, min_sm_mhz = True, None

    def __init__(self, timer: timing.Timer, sample_s: float, enough_rest: float | None) -> None:
        self.timer, self.sample_s, self.enough_rest = timer, sample_s, enough_rest

    def sm_clock_mhz(self) -> int:
        limited = self.enough_rest is None or self.timer.rest_s < self.enough_rest * self.sample_s
        return 1590 if limited else 1980

    def power_capped(self, clock_mhz: int) -> bool:
        return clock_mhz < 1980


@pytest.mark.parametrize("enough_rest", [1.0, None])
def test_samples_the_power_limit_slowed_are_dropped_while_the_rest_between_samples_grows(enough_rest, clock):
    # the policy on the CPU's clock: a GPU sleep cannot run here, so the timer is told it could; the loop
    # reads a clock the test moves, a millisecond a sample, so no other job on the host moves what it decides
    timer = timing.Timer("cpu")
    timer.hide_launch_latency, timer.sleep_cycles_per_s = True, 1e9
    sample_s = 0.001
    gpu = _PowerLimitedGpu(timer, sample_s, enough_rest)
    # a raised floor, as TimedShare asks of a process's rows; once the GPU rests, the matrix's lengths hold
    # (min_time_s is the budget: the budget, not the noise target, ends the loop)
    ask = _last_ask(20.0, 20.0, 0.0)
    result = measure.measure(
        lambda: clock.sleep(sample_s), timer, 0.3, 0.3, Sampling(gpu=gpu, ask=ask)
    ).to_json()
    rest, dropped = result["power_rest_s"], result["power_capped_discarded"]
    # the rest grows from half a sample by half again, no oftener than every REST_EVERY_S
    steps = math.ceil(math.log((enough_rest or timing.REST_MAX) / timing.REST_STEP, 1.5)) + 1
    assert dropped >= steps  # a step's samples are dropped at least
    if enough_rest is not None:
        assert enough_rest * sample_s <= rest < timing.REST_MAX * sample_s  # grown until the limit lifts
        assert set(result["sm_clock_mhz"]) == {1980}  # no sample the limit slowed is kept
    else:  # a limit no rest lifts: once the rest is at its longest, its samples are kept
        assert rest == pytest.approx(timing.REST_MAX * result["stats"]["median"], rel=0.3)
        assert set(result["sm_clock_mhz"]) == {1590} and result["stats"]["n"] >= measure.MIN_SAMPLES
    # the budget counts from where samples stopped being dropped, and it is the matrix's, not 20 s: on the
    # loop's clock, the steps' dropped samples and then the 0.3 s budget of kept ones, to ten samples
    assert result["stop_reason"] == "time_budget" and "timed_floor_s" not in result
    dropping_s = (steps - 1) * timing.REST_EVERY_S
    assert result["sampling_wall_s"] == pytest.approx(dropping_s + 0.3, abs=10 * sample_s)
    assert sum(result["samples_s"]) == pytest.approx(0.3, abs=5 * sample_s)  # what the budget held
    assert measure.measure(lambda: None, timing.Timer("cpu"), 0.01).power_rest_s is None


def test_loops_never_lengthened_do_not_set_the_share_expected_of_those_that_will_be():
    now = [5.0]
    process = share.TimedShare(0.5, 4, started=0.0, clock=lambda: now[0])
    process.add(0.9, 1.0, 1.3)  # a loop 90 % timed
    now[0] += 1.3
    floor_before = process.ask(10.0).timed_s  # a time budget the floors stay under
    process.add(0.25, 1.0, 1.3, rested=True)  # a quarter timed: its GPU rested for the power limit
    now[0] += 1.3
    process.add(0.3, 1.0, 1.3)  # a short kernel's loop, under the target's share plus 0.1
    now[0] += 1.3
    assert process.loop_share == pytest.approx(0.9)
    # the untimed time they cost is made up by the last row all the same, within its time budget
    ask = process.ask(10.0)
    assert ask is not None and ask.timed_s > floor_before and ask.min_loop_share == 0.6


def test_cudnn_version_helpers():
    assert cudnn._version_text(91900) == "9.19.0"
    assert cudnn._version_text(8907) == "8.9.7"
    assert cudnn._same_version("9.14", "9.14.0")
    assert cudnn._same_version("9.14.0.64", "9.14.0")
    assert not cudnn._same_version("9.1", "9.14.0")
    assert not cudnn._same_version("9", "9.14.0")


def test_the_expected_cudnn_is_read_as_the_orchestrator_writes_it():
    from harness.plan.axes import CudnnExpectation

    for expect in (
        CudnnExpectation("bundled"),
        CudnnExpectation("wheel", version="9.18.1.3"),
        CudnnExpectation("system", "/opt/cudnn/lib", "9.14.0"),
    ):
        text = json.dumps(expect.to_json())
        assert json.dumps(cudnn.request(text)) == text  # recorded as 'requested', key for key
    for wrong in (
        '"bundled"',
        '{"source": "pip"}',
        '{"source": "wheel", "version": 9}',
        '{"source": "disabled", "x": "1"}',
    ):
        with pytest.raises(ValueError, match="the cuDNN expectation"):
            cudnn.request(wrong)


def test_the_gpu_state_around_a_measurement_is_what_changed():
    from harness.suite.probes.gpu_state import delta

    before = {
        "clock_event_reasons": 0,
        "temperature_c": 40,
        "power_w": 100.0,
        "power_violation_ns": 10,
        "thermal_violation_ns": None,  # NVML did not answer
    }
    after = {
        **before,
        "clock_event_reasons": 4,
        "temperature_c": 45,
        "power_violation_ns": 25,
        "thermal_violation_ns": 7,
    }
    changed = delta(before, after)
    assert changed == {"clock_event_reasons_after": 4, "temperature_c": [40, 45], "power_violation_ns": 15}
    assert list(changed) == ["clock_event_reasons_after", "temperature_c", "power_violation_ns"]
    assert delta({}, after) == {} and delta(before, {}) == {}  # no NVML: nothing recorded


def test_nvml_reads_the_gpu_the_run_is_on_not_the_hosts_first():
    # a run pinned to the host's GPU 3 sees it as CUDA's device 0; NVML numbers the host's GPUs, so the
    # index alone read GPU 0's clock (lease 15: every sample dropped as throttled while GPU 0 idled)
    from harness.suite.probes.gpu_state import nvml_device

    uuid = "552e6c6c-5861-bc10-985f-363246f127fe"  # as torch gives it, without NVML's prefix
    assert nvml_device(0, uuid, "3") == f"GPU-{uuid}"
    assert nvml_device(0, f"GPU-{uuid}", None) == f"GPU-{uuid}"
    assert nvml_device(0, None, "3") == 3
    assert nvml_device(1, None, "2, 3") == 3
    assert nvml_device(0, None, None) == 0  # every GPU visible: the indices agree
    # named by UUID, or fewer entries than the index: not guessed
    assert nvml_device(0, None, "GPU-552e6c6c") is None
    assert nvml_device(2, None, "0,1") is None


@pytest.mark.skipif(torch.version.cuda is not None, reason="checks the CPU build's answers")
def test_probe_on_a_cpu_build():
    bundled = cudnn.probe({"source": "bundled"}, "cpu")
    assert bundled["verified"] and "CPU build" in bundled["verification"]
    assert bundled["loaded_libraries"] == []
    system = cudnn.probe({"source": "system", "lib_dir": "/usr/lib", "version": "9.14.0"}, "cpu")
    assert not system["verified"] and "CPU build" in system["verification"]
    disabled = cudnn.probe({"source": "disabled"}, "cpu")
    assert disabled["verified"] and disabled["enabled"] is False
    torch.backends.cudnn.enabled = True


def run_suite(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], dict]:
    out = tmp_path / "result.json"
    done = subprocess.run(
        [sys.executable, "-m", "harness.suite", "run", "--out", str(out), *args],
        env=env or harness_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    return done, json.loads(out.read_text()) if out.exists() else {}


@pytest.mark.slow
def test_suite_run_writes_a_complete_document(tmp_path):
    done, doc = run_suite(
        tmp_path,
        "--workloads",
        "conv2d_r50_3x3,lstm,sdpa",
        "--dtypes",
        "fp32,bf16",
        "--time-budget-s",
        "0.02",
        "--knobs",
        '[{"cudnn_benchmark": false, "deterministic": false, "tf32": false},'
        ' {"cudnn_benchmark": true, "deterministic": true, "tf32": false}]',
    )
    assert done.returncode == 0, done.stderr
    assert doc["status"] == "ok" and doc["failure"] is None
    assert len(doc["measurements"]) == 3 * 2 * 2
    conv = doc["measurements"][0]
    assert conv["workload"] == "conv2d_r50_3x3" and conv["status"] == "ok"
    assert conv["flops"] > 0 and conv["tflops"] > 0 and conv["params"]["kernel"] == 3
    assert doc["environment"]["torch"]["version"] == torch.__version__
    assert doc["environment"]["python"]["version"] == ".".join(map(str, sys.version_info[:3]))
    assert "loaded_libraries" in doc["cudnn"]


def test_suite_refuses_unknown_workloads(tmp_path):
    done, doc = run_suite(tmp_path, "--workloads", "warp_drive")
    assert done.returncode == 2 and "unknown workload" in done.stderr and doc == {}


def test_suite_lists_its_catalog_without_torch_import():
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "harness.suite", "list", "--json"],
        env=harness_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    catalog = json.loads(done.stdout)
    ids = {w["id"] for w in catalog["workloads"]}
    first_suite = {
        "conv2d_r50_1x1",
        "conv2d_r50_3x3",
        "conv2d_r50_7x7s2",
        "batchnorm2d",
        "maxpool2d",
        "relu",
        "gelu",
        "sdpa",
        "lstm",
        "gemm",
    }
    assert first_suite <= ids  # the first suite's ids stay, naming the same computations
    assert len(ids) == len(catalog["workloads"]) >= 70
    assert "| torch" not in done.stderr  # importtime lists every module imported


@pytest.mark.slow
def test_the_digest_needs_no_numpy_and_matches_the_raw_bytes():
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    expected = hashlib.sha256(b"torch.float32" + b"(3, 4)" + struct.pack("<12f", *range(12))).hexdigest()
    assert check.digest([t]) == expected
    assert check.digest([t.t().contiguous().t()]) == expected  # layout does not change the digest
    # each tensor's own bytes in row-major order, whatever its layout, read while it is alive (a strided
    # view's contiguous copy lives only inside the digest)
    strided = torch.arange(40, dtype=torch.float32).reshape(5, 8)[::2, 1:4]
    raw = b"".join(struct.pack("<3f", *row) for row in strided.tolist())
    assert check.digest([strided]) == hashlib.sha256(b"torch.float32" + b"(3, 3)" + raw).hexdigest()
    both = [t, torch.zeros(0, 3), torch.tensor([True, False])]
    joined = (
        b"torch.float32(3, 4)" + struct.pack("<12f", *range(12)) + b"torch.float32(0, 3)" + b"torch.bool(2,)"
    )
    assert check.digest(both) == hashlib.sha256(joined + b"\x01\x00").hexdigest()
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; sys.modules['numpy'] = None\n"
            "import torch\nfrom harness.suite.numerics.check import digest\n"
            "print(digest([torch.ones(2, 3)]))",
        ],
        env=harness_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and len(done.stdout.strip()) == 64, done.stderr


@pytest.mark.skipif(not torch.cuda.is_available(), reason="a GPU's outputs go through pinned memory")
def test_a_gpu_outputs_digest_is_its_host_copys_in_and_out_of_inference_mode():
    # one pinned buffer serves every row: made in a row checked in inference mode, it is written by the next
    # row's check outside it (an inference tensor there broke 26 rows' numerics on an H200)
    big, small = torch.randn(1000, 300), torch.randn(7, 3)
    with torch.inference_mode():
        assert check.digest([small.cuda()]) == check.digest([small])
    assert check.digest([big.cuda()]) == check.digest([big])  # grown, outside inference mode
    assert check.digest([big.cuda().t()]) == check.digest([big.t()])
    check.release()


def test_the_running_noise_matches_a_full_recomputation():
    samples = [1.0, 1.2, 0.9, 1.1, 1.05, 0.95, 1.3, 1.0]
    noise = measure._RunningNoise()
    for i, value in enumerate(samples, 1):
        noise.add(value)
        if i >= 2:
            part = samples[:i]
            expected = statistics.stdev(part) / statistics.fmean(part)
            assert noise.rel_stdev() == pytest.approx(expected, rel=1e-12)
        assert noise.total == pytest.approx(sum(samples[:i]))


def test_cached_input_draws_are_bit_identical_and_not_shared():
    from harness.suite.workloads import tensors

    fresh = torch.randn(3, 5, generator=torch.Generator().manual_seed(7), dtype=torch.float32) * 0.5
    first = tensors.randn(3, 5, device="cpu", dtype=torch.float32, seed=7, scale=0.5)
    first.add_(1.0)  # a caller changing its copy in place must not change the next caller's inputs
    second = tensors.randn(3, 5, device="cpu", dtype=torch.float32, seed=7, scale=0.5)
    assert torch.equal(second, fresh)
    assert torch.equal(
        tensors.randn(3, 5, device="cpu", dtype=torch.float64, seed=7, scale=0.5), fresh.double()
    )


def test_a_host_memory_fault_stops_at_its_cap_and_is_recorded_as_an_error(tmp_path):
    # fault_host_oom with no memory limit stops at its cap; the docker test (test_faults) sets a limit
    from harness.suite.catalog import CATALOG, for_profile
    from harness.suite.workloads import faults

    assert not any(w.startswith("fault_") for p in ("smoke", "default", "full") for w in for_profile(p))
    spec = CATALOG["fault_host_oom"]
    small = dataclasses.replace(spec, params={**spec.params, "limit_gib": 0})
    with pytest.raises(MemoryError, match="was not stopped by a memory limit"):
        faults.build(small, "smoke", "cpu", "fp32").fn()


@pytest.mark.parametrize(
    ("expect", "seen", "says"),
    [
        # a cuDNN that is not the one asked for: the cell fails its cudnn-check instead of measuring
        (
            {"source": "system", "lib_dir": "/opt/cudnn/lib", "version": "9.14"},
            {"loaded_dirs": ["/opt/cudnn/lib"], "runtime_version": "9.19.0", "enabled": True},
            "expected cuDNN 9.14, torch reports 9.19.0",
        ),
        (
            {"source": "system", "lib_dir": "/opt/cudnn/lib"},
            {
                "loaded_dirs": ["/opt/cudnn/lib", "/venv/nvidia/cudnn/lib"],
                "runtime_version": "9.14.0",
                "enabled": True,
            },
            "but some came from /venv/nvidia/cudnn/lib",
        ),
        (
            {"source": "system", "lib_dir": "/opt/cudnn/lib"},
            {"loaded_dirs": [], "runtime_version": None, "enabled": True},
            "no libcudnn file is mapped",
        ),
        (
            {"source": "disabled"},
            {"loaded_dirs": [], "runtime_version": None, "enabled": True},
            "torch.backends.cudnn.enabled is True",
        ),
    ],
)
def test_a_cudnn_other_than_the_one_asked_for_fails_verification(expect, seen, says, monkeypatch):
    monkeypatch.setattr("os.path.realpath", lambda p: p)
    verified, why = cudnn._verify(expect, seen, cuda_build=True)
    assert verified is False and says in why


def test_each_workload_family_holds_its_specs_beside_its_builder():
    from harness.suite.catalog import CATALOG, FAMILY
    from harness.suite.contract import BuildsCalls, MeasuresItself
    from harness.suite.workloads import FAMILIES

    helpers = {"__init__", "tensors", "models", "layers"}  # shared by builders; no workloads of their own
    modules = {p.stem for p in (SUITE / "workloads").glob("*.py")} - helpers
    assert set(FAMILY) == modules  # a family module the catalog misses would never run
    assert len(FAMILIES) == len(modules)
    for name, family in FAMILY.items():
        assert family.SPECS, name
        assert all(spec.family == name for spec in family.SPECS), name  # each spec beside its builder
        assert isinstance(family, BuildsCalls) != isinstance(family, MeasuresItself), name  # one of the two
        # only workloads that start their own processes (one per GPU) measure themselves
        assert isinstance(family, MeasuresItself) == any(s.gpus == "all" for s in family.SPECS), name
    assert len(CATALOG) == sum(len(f.SPECS) for f in FAMILIES)  # ids are unique across families


@pytest.mark.slow
def test_a_workload_that_cannot_run_here_is_recorded_unsupported_not_as_an_error(tmp_path):
    # Each raises Unsupported: the fault needs a GPU; torch has no CPU kernel for a forced efficient
    # attention; a training step has no fp64 reference (so no numerics, which its spec says too).
    workloads = "fault_cuda_error,sdpa_efficient_s512,train_small_cnn"
    done, doc = run_suite(
        tmp_path, "--device", "cpu", "--dtypes", "fp32", "--time-budget-s", "0.05", "--workloads", workloads
    )
    assert done.returncode == 0, done.stderr
    by_id = {m["workload"]: m for m in doc["measurements"]}
    assert by_id["fault_cuda_error"]["status"] == "unsupported"
    assert by_id["fault_cuda_error"]["error"] == "fault_cuda_error needs a CUDA device"
    assert by_id["sdpa_efficient_s512"]["status"] == "unsupported"
    assert "the efficient backend cannot run this here" in by_id["sdpa_efficient_s512"]["error"]
    assert by_id["train_small_cnn"]["status"] == "ok" and "numerics" not in by_id["train_small_cnn"]


@pytest.mark.slow
def test_rows_measure_exactly_those_pairs_not_every_workload_by_dtype(tmp_path):
    # a late round of qualify runs its undecided rows only: relu fp32 and gemm bf16, not the 4 of the product
    rows = "relu:fp32,gemm:bf16"
    done, doc = run_suite(
        tmp_path, "--device", "cpu", "--time-budget-s", "0.02", "--no-numerics", "--rows", rows
    )
    assert done.returncode == 0, done.stderr
    assert [(m["workload"], m["dtype"], m["status"]) for m in doc["measurements"]] == [
        ("relu", "fp32", "ok"),
        ("gemm", "bf16", "ok"),
    ]
    refused, _ = run_suite(tmp_path, "--device", "cpu", "--rows", "relu:fp32,gemn:fp32")
    assert refused.returncode == 2 and "unknown workload(s) gemn" in refused.stderr


def test_the_suite_names_its_source_and_any_change_to_it_changes_the_name(tmp_path):
    from harness import suite

    def listed_hash(root: Path) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "harness.suite", "list", "--json"],
            cwd=root,
            env={**os.environ, "PYTHONPATH": str(root)},
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        return str(json.loads(done.stdout)["source_sha256"])

    assert listed_hash(REPO) == suite.source_sha256()
    copy = tmp_path / "harness"
    shutil.copytree(SUITE.parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert listed_hash(tmp_path) == suite.source_sha256()  # where it lies does not matter
    gemm = copy / "suite" / "workloads" / "gemm.py"
    gemm.write_text(gemm.read_text() + "\n# a comment is a change too\n")
    assert listed_hash(tmp_path) != suite.source_sha256()


@pytest.mark.slow
def test_each_measurement_records_what_ran_in_one_profiled_call_outside_its_samples(tmp_path):
    from jsonschema import Draft202012Validator

    done, doc = run_suite(
        tmp_path,
        "--device",
        "cpu",
        "--dtypes",
        "fp32",
        "--time-budget-s",
        "0.05",
        "--no-numerics",
        "--workloads",
        "sdpa,conv2d_r50_3x3,lstm",
    )
    assert done.returncode == 0, done.stderr
    schema = json.loads((REPO / "schemas" / "result.schema.json").read_text())
    measurement = Draft202012Validator({"$defs": schema["$defs"], "$ref": "#/$defs/measurement"})
    ran = {}
    for m in doc["measurements"]:
        assert list(measurement.iter_errors(m)) == [], m["workload"]
        assert m["stats"]["n"] == len(m["samples_s"])  # the profiled call is not a sample
        ran[m["workload"]] = m["what_ran"]
    operators = {w: {o["name"] for o in r["operators"]} for w, r in ran.items()}
    # torch's dispatch shows in the operators: on a CPU, attention goes to its flash kernel and a
    # convolution to oneDNN or torch's own, never to cuDNN; asking cuDNN whether it could is not using it
    assert ran["sdpa"]["attention_backend"] == "flash"
    assert "aten::_scaled_dot_product_flash_attention_for_cpu" in operators["sdpa"]
    assert (
        "aten::conv2d" in operators["conv2d_r50_3x3"] and ran["conv2d_r50_3x3"]["attention_backend"] is None
    )
    assert not any(r["cudnn_used"] for r in ran.values())
    assert "kernels" not in ran["sdpa"]  # no GPU, no kernels
    assert all(r["profile_s"] > 0 for r in ran.values())  # recorded; how long is the host's, not a bound
    assert "loaded_after_run" in doc["cudnn"]

    _, without = run_suite(
        tmp_path,
        "--device",
        "cpu",
        "--dtypes",
        "fp32",
        "--time-budget-s",
        "0.02",
        "--no-numerics",
        "--no-what-ran",
        "--workloads",
        "relu",
    )
    assert "what_ran" not in without["measurements"][0]


def test_what_ran_reads_the_backend_and_cudnn_from_operator_names():
    from harness.suite.probes import what_ran

    assert what_ran.attention_backend(["aten::_scaled_dot_product_cudnn_attention"]) == "cudnn"
    assert what_ran.attention_backend(["aten::_scaled_dot_product_flash_attention_backward"]) == "flash"
    assert what_ran.attention_backend(["aten::bmm", "aten::softmax"]) is None
    cudnn = [
        "aten::cudnn_convolution",
        "aten::_cudnn_rnn",
        "aten::cudnn_batch_norm",
        "aten::_scaled_dot_product_cudnn_attention",
    ]
    assert all(what_ran._is_cudnn(name) for name in cudnn)
    assert not any(what_ran._is_cudnn(n) for n in ("aten::cudnn_is_acceptable", "aten::mkldnn_convolution"))


@pytest.mark.slow
@pytest.mark.parametrize("source", ["bundled", "disabled"])
def test_ddp_ranks_run_with_the_cells_cudnn_setting(tmp_path, source):
    # the ranks are fresh processes: torch's default (cuDNN on) unless the cell's setting is handed over
    done, doc = run_suite(
        tmp_path,
        "--device",
        "cpu",
        "--dtypes",
        "fp32",
        "--time-budget-s",
        "0.1",
        "--no-numerics",
        "--workloads",
        "ddp_train_step",
        "--expect-cudnn",
        json.dumps({"source": source}),
    )
    assert done.returncode == 0, done.stderr
    (ddp,) = doc["measurements"]
    assert ddp["status"] == "ok", ddp.get("error")
    assert ddp["params"]["cudnn_enabled"] is (source != "disabled") is doc["cudnn"]["enabled"]


def test_a_disabled_cell_says_when_cudnn_ran_all_the_same():
    # what an H100 showed (the lab's what-ran/probe-h100.txt): with cuDNN disabled, sdpa still ran cuDNN
    ran = {
        "operators": [{"name": "aten::_scaled_dot_product_cudnn_attention", "calls": 1}],
        "cudnn_used": True,
    }
    native = {"operators": [{"name": "aten::_slow_conv2d_forward", "calls": 1}], "cudnn_used": False}
    measurements = [
        {"workload": "sdpa", "dtype": "bf16", "what_ran": ran},
        {"workload": "conv2d_r50_3x3", "dtype": "bf16", "what_ran": native},
        {"workload": "relu", "dtype": "bf16"},  # recorded without what_ran: says nothing either way
    ]
    said = cudnn.used_anyway({"requested": {"source": "disabled"}}, measurements)
    assert said == "cuDNN was disabled, yet 1 measurement(s) ran cuDNN all the same: sdpa bf16"
    assert cudnn.used_anyway({"requested": {"source": "bundled"}}, measurements) is None
    assert cudnn.used_anyway({"requested": {"source": "disabled"}}, measurements[1:]) is None
    # the engine sub-libraries load when something calls into them: mapped during the run says cuDNN was used
    lib = "/venv/site-packages/nvidia/cudnn/lib/"
    record = {
        "requested": {"source": "disabled"},
        "loaded_libraries": [lib + "libcudnn.so.9", lib + "libcudnn_graph.so.9"],
        "loaded_after_run": [
            lib + "libcudnn.so.9",
            lib + "libcudnn_graph.so.9",
            lib + "libcudnn_engines_precompiled.so.9",
        ],
    }
    assert cudnn.used_anyway(record, measurements[1:]) == (
        "cuDNN was disabled, yet cuDNN libraries were first mapped while the workloads ran: "
        "libcudnn_engines_precompiled.so.9"
    )
    both = cudnn.used_anyway(record, measurements)
    assert both and "1 measurement(s) ran cuDNN all the same: sdpa bf16; and cuDNN libraries" in both
    unchanged = {**record, "loaded_after_run": record["loaded_libraries"]}
    assert cudnn.used_anyway(unchanged, measurements[1:]) is None
    verified, why = cudnn._verify({"source": "disabled"}, {"enabled": False, "loaded_dirs": []}, True)
    assert verified and "native kernels run" not in why  # the check no longer claims what it cannot know


def test_a_measurement_is_held_to_the_tolerance_of_the_precision_it_ran_in():
    weights = torch.randn(64, 64, dtype=torch.float64)
    x = torch.randn(64, 64, dtype=torch.float64)
    exact = lambda: x @ weights  # noqa: E731
    off_by = lambda scale: lambda: x.float() @ weights.float() * (1 + scale)  # noqa: E731
    fp32 = check.check(off_by(0.0), exact, "fp32")
    assert fp32["tolerance_rel_rmse"] == 1e-5 and fp32["within_tolerance"] and fp32["rel_rmse"] < 1e-6
    drifted = check.check(off_by(1e-3), exact, "fp32")  # a TF32-sized error
    assert not drifted["within_tolerance"] and drifted["rel_rmse"] == pytest.approx(1e-3, rel=1e-2)
    tf32 = check.check(off_by(1e-3), exact, "fp32", tf32=True)  # fp32 storage, TF32 math allowed
    assert tf32["tolerance_rel_rmse"] == 5e-3 and tf32["within_tolerance"]
    assert check.precision("bf16", True) == "bf16"
    nan = check.check(lambda: torch.tensor([1.0, float("nan")]), lambda: torch.tensor([1.0, 1.0]), "fp32")
    assert nan["nan_count"] == 1 and not nan["within_tolerance"]


@pytest.mark.slow
def test_a_profiler_that_refuses_costs_the_record_of_what_ran_not_the_timing(tmp_path):
    # a container may deny the profiler (CUPTI); made to refuse here by a sitecustomize that the
    # suite's interpreter runs first
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(
        "import torch.autograd.profiler\n"
        "class _Refuses:\n"
        "    def __init__(self, *args, **kwargs):\n"
        "        raise RuntimeError('CUPTI_ERROR_INSUFFICIENT_PRIVILEGES (made so by the test)')\n"
        "torch.autograd.profiler.profile = _Refuses\n"
    )
    env = harness_env()
    env["PYTHONPATH"] = os.pathsep.join([str(hook), env["PYTHONPATH"]])
    done, doc = run_suite(
        tmp_path,
        "--device",
        "cpu",
        "--dtypes",
        "fp32",
        "--time-budget-s",
        "0.02",
        "--no-numerics",
        "--workloads",
        "relu,conv2d_r50_3x3",
        env=env,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert [m["status"] for m in doc["measurements"]] == ["ok", "ok"]
    for m in doc["measurements"]:
        assert "what_ran" not in m and m["stats"]["n"] > 0
        assert (
            m["what_ran_error"] == "RuntimeError: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES (made so by the test)"
        )


def _process(
    rows: int, setup_s: float, loop_share: float, min_time_s: float, time_budget_s: float = 1.0
) -> tuple[float, list[float]]:
    """A GPU process on a simulated clock: its timed share of wall time, and the floors it was asked for.

    Each measurement costs 0.3 s outside its loop and samples the floor its loop's share asks for, at
    least min_time_s; a loop too little timed to be lengthened SHORT_LOOP_S."""
    now = [0.0]
    process = share.TimedShare(0.5, rows, started=0.0, clock=lambda: now[0])
    now[0] = setup_s
    floors = []
    for _ in range(rows):
        ask = process.ask(time_budget_s)  # what the suite asks the measurement
        assert ask is not None
        floors.append(ask.timed_s)
        timed, budget = ask.at(loop_share)  # once the loop has a share of its own
        assert budget >= timed / loop_share  # long enough to reach it
        lengthened = loop_share >= ask.min_loop_share
        if lengthened and (ask.last or loop_share >= ask.loop_share):  # the floor its own share asks for
            wanted = ask.owed_s / (1 - ask.ratio * (1 - loop_share) / loop_share)
            assert timed == pytest.approx(min(time_budget_s, max(0.0, wanted)))  # never past the budget
        timed = max(timed, min_time_s) if lengthened else share.SHORT_LOOP_S
        loop = timed / loop_share
        now[0] += 0.3 + loop
        process.add(timed, loop, 0.3 + loop)
    return process.timed_s / (now[0] + share.OUTSIDE_S), floors


@pytest.mark.parametrize("rows", [1, 2, 6])
def test_a_gpu_process_of_few_rows_samples_no_longer_than_its_time_budget_to_pay_back_its_start(rows):
    timed_share, floors = _process(rows, setup_s=5.0, loop_share=0.8, min_time_s=0.5)
    # half its time would ask seconds of each row: each is asked the time budget, and the process ends
    assert floors == [1.0] * rows and timed_share < 0.5, (timed_share, floors)


def test_rows_enough_to_pay_for_their_start_reach_the_share_under_their_time_budgets():
    timed_share, floors = _process(40, setup_s=5.0, loop_share=0.8, min_time_s=0.25)
    assert 0.5 <= timed_share < 0.55, (timed_share, floors)  # enough, and no more than that
    assert max(floors) <= 1.0 and floors[0] > 0.25


def test_a_full_round_is_not_lengthened_and_a_short_loop_is_made_up_for_later():
    timed_share, floors = _process(15, setup_s=5.0, loop_share=0.95, min_time_s=1.0)
    # under half a second added over 15 rows: what aiming 1.5 points above the target costs
    assert sum(max(1.0, f) - 1.0 for f in floors) < 0.5 and timed_share > 0.5
    # loops a third timed are not lengthened: the measurements after them are asked to pay for them
    timed_share, floors = _process(3, setup_s=5.0, loop_share=0.33, min_time_s=0.1, time_budget_s=10.0)
    assert floors == sorted(floors) and floors[-1] > 2 * floors[0]
    # a process that stalled a minute asks its last measurement no more than the time budget
    capped = share.TimedShare(0.5, 1, started=0.0, clock=lambda: 60.0).ask(1.0)
    assert capped is not None and capped.timed_s == 1.0 and capped.at(0.9) == (1.0, 1.25 / 0.9)
    assert share.TimedShare(0.0, 1).ask(1.0) is None  # off


def test_graphs_taken_in_turn_fit_their_memory_and_hold_what_they_recorded():
    gib = 1024**3
    # GRAPHS captures, fewer where their memory would pass GRAPHS_BYTES or half the free memory
    assert graphs.graphs_that_fit(4, 1024**2, free_bytes=80 * gib) == 4
    assert graphs.graphs_that_fit(4, 6 * gib, free_bytes=80 * gib) == 2  # 16 GiB of room
    assert graphs.graphs_that_fit(4, 6 * gib, free_bytes=20 * gib) == 1  # half of 20 GiB
    assert graphs.graphs_that_fit(4, 40 * gib, free_bytes=80 * gib) == 1  # one graph whatever it takes
    assert graphs.graphs_that_fit(4, 0, free_bytes=80 * gib) == 4
    # then what the captures took from the driver: their pools reserve more than the call allocates
    assert graphs.another_fits(1, free_before=80 * gib, free_now=78 * gib)  # 2 GiB each: 4 fit in 16
    assert not graphs.another_fits(1, free_before=80 * gib, free_now=70 * gib)  # 10 + 10 > 16 GiB
    assert not graphs.another_fits(3, free_before=20 * gib, free_now=12 * gib)  # past half of 20 GiB
    # each call replays the next graph, round and round; the storages the graphs recorded stay alive
    calls: list[int] = []
    held = [torch.ones(2)]
    rotation = graphs.rotation([lambda i=i: calls.append(i) for i in range(3)], held)
    for _ in range(7):
        rotation()
    assert calls == [0, 1, 2, 0, 1, 2, 0]
    assert any(cell.cell_contents is held for cell in rotation.__closure__ or ())
    single = lambda: None  # noqa: E731 - one graph is replayed as it is
    assert graphs.rotation([single], []) is single
    # only GPU tensors move; a CPU tensor stays where it is, and nothing is held for it
    x, kept = torch.arange(4.0), []
    address = x.data_ptr()
    graphs.relocate([x, "not a tensor"], kept)
    assert x.data_ptr() == address and kept == []


def test_on_a_cpu_a_sample_is_one_call_and_one_graph_whatever_is_asked():
    result = measure.measure(
        lambda: None, timing.Timer("cpu"), 0.01, 0.0, Sampling(graphs=4, batch=8)
    ).to_json()
    assert result["graphs"] == 1 and result["batch"] == 1 and result["l2_flushed"] is False


def test_records_beside_the_timing_are_not_paid_back_by_longer_sampling():
    # suite 0.11: what ran, numerics and peak memory are records beside the timing; a process that spent
    # 30 s on them asks its next measurement for the same timed work as one that spent none
    asks = []
    for records_s in (0.0, 30.0):
        now = [5.0]
        process = share.TimedShare(0.5, 10, started=0.0, clock=lambda now=now: now[0])
        for _ in range(3):
            now[0] += 0.3 + 0.5 + records_s / 3
            process.add(0.4, 0.5, 0.3 + 0.5, records_s=records_s / 3)
        ask = process.ask(1.0)
        assert ask is not None
        asks.append(ask.owed_s)
    assert asks[1] == pytest.approx(asks[0])


class _CountingFamily:
    """A workload family whose fp64 builds are counted."""

    def __init__(self) -> None:
        self.fp64_builds = 0

    def build(self, spec, profile, device, dtype):
        from harness.suite.contract import Built

        if dtype == "fp64":
            self.fp64_builds += 1
        values = torch.linspace(0, 1, 64, dtype=torch.float64 if dtype == "fp64" else torch.float32)
        return Built(lambda: values * 2, {})


def test_every_dtype_of_a_workload_is_checked_against_one_fp64_reference():
    from harness.suite.catalog import CATALOG
    from harness.suite.numerics import sweep

    family = _CountingFamily()
    spec = CATALOG["relu"]
    knobs = {"cudnn_benchmark": False, "deterministic": False, "tf32": False}
    sweep._references.clear()
    for dtype in ("fp32", "tf32", "bf16", "fp16"):
        built = family.build(spec, "smoke", "cpu", dtype)
        found = sweep._numerics(family, spec, "smoke", "cpu", dtype, knobs, built, check)  # type: ignore[arg-type]
        assert found["rel_rmse"] < 1e-6 and found["within_tolerance"] is True
    assert family.fp64_builds == 1  # once for the four dtypes (suite 0.11)
    sweep._numerics(family, CATALOG["gelu"], "smoke", "cpu", "fp32", knobs, built, check)  # type: ignore[arg-type]
    assert family.fp64_builds == 2 and len(sweep._references) == 1  # one workload's held at a time
    sweep._references.clear()


def test_numerics_run_once_every_row_is_timed_and_a_failed_check_is_an_error():
    from harness.suite.numerics import sweep

    knobs = {"cudnn_benchmark": False, "deterministic": False, "tf32": False}
    timed = {
        "workload": "relu",
        "dtype": "fp32",
        "knobs": knobs,
        "status": "ok",
        "phases_s": {},
        "wall_s": 1.0,
    }
    broken = {**timed, "workload": "gelu", "phases_s": {}}
    skipped = {"workload": "relu", "dtype": "bf16", "knobs": knobs, "status": "error", "error": "before"}
    original = sweep._numerics

    def fails_for_gelu(family, spec, *args):
        if spec.id == "gelu":
            raise ValueError("made to fail by the test")
        return original(family, spec, *args)

    sweep._numerics = fails_for_gelu  # type: ignore[assignment]
    try:
        sweep.numerics_pass([timed, broken, skipped], "smoke", "cpu")
    finally:
        sweep._numerics = original  # type: ignore[assignment]
    assert timed["numerics"]["within_tolerance"] is True and timed["status"] == "ok"  # type: ignore[index]
    assert timed["phases_s"]["numerics"] > 0 and timed["wall_s"] > 1.0  # type: ignore[index, operator]
    assert broken["status"] == "error" and broken["error"] == "ValueError: made to fail by the test"
    assert "numerics" not in skipped and skipped["error"] == "before" and not sweep._references


def test_a_sample_is_stored_at_what_the_timer_resolves_and_no_statistic_moves():
    assert measure.stored(1.4272e-05) == 1.4272e-05  # a 32 ns tick's multiple stays exact
    assert measure.stored(0.000123456789) == 0.000123457  # whole nanoseconds
    assert measure.stored(0.0153827391) == 0.0153827  # 6 significant digits: at most 5e-6 of it
    assert measure.stored(2.5e-10) == 0.0 and measure.stored(1.0) == 1.0
    raw = [1.5e-3 + 3.7e-9 * i + 1e-12 * (i % 7) for i in range(200)]
    kept = [measure.stored(x) for x in raw]
    for key in ("median", "mean", "q1", "q3", "min", "max"):
        assert abs(measure.summarize(kept)[key] / measure.summarize(raw)[key] - 1) <= 5e-6


def test_a_measurement_is_typed_and_writes_the_results_names():
    found = measure.measure(lambda: None, timing.Timer("cpu"), 0.01)
    assert isinstance(found, measure.Measurement) and found.stats["n"] == len(found.samples_s)
    document = found.to_json()
    assert document["unit"] == "s" and document["clock"] == found.clock and "timed_floor_s" not in document
    assert set(document) >= {"samples_s", "stats", "stop_reason", "phases_s", "first_call_s"}
    assert all(measure.stored(s) == s for s in found.samples_s)


def test_the_draw_cache_holds_a_default_profile_pass_on_a_host_of_24_gib_or_more():
    from harness.suite.workloads.tensors import draw_cache_bytes

    gib = 1 << 30
    # the default profile's distinct fp32 draws on a GPU are 4.2 GiB: a smaller cache draws the large
    # inputs again in every window
    assert draw_cache_bytes(24 * gib) == 6 * gib and draw_cache_bytes(560 * gib) == 8 * gib
    assert draw_cache_bytes(2 * gib) == gib and draw_cache_bytes(None) == gib  # small or unknown hosts


@pytest.mark.slow
def test_a_process_on_a_cpu_measures_its_cpu_rows_and_rows_named_for_a_late_round_come_first(tmp_path):
    common = ("--device", "cpu", "--time-budget-s", "0.02", "--no-numerics", "--no-what-ran")
    cpu_rows = ("--cpu-rows", "gemm:fp32_default,maxpool2d:fp32_default")
    done, doc = run_suite(tmp_path, *common, "--dtypes", "fp32_default,bf16", *cpu_rows)
    assert done.returncode == 0, done.stderr
    assert doc["status"] == "ok", doc.get("failure")
    assert [(m["workload"], m["dtype"]) for m in doc["measurements"]] == [
        ("gemm", "fp32_default"),
        ("maxpool2d", "fp32_default"),
    ]
    done, doc = run_suite(tmp_path, *common, *cpu_rows, "--rows", "sdpa:bf16")
    assert [(m["workload"], m["dtype"]) for m in doc["measurements"]] == [("sdpa", "bf16")]
    done, doc = run_suite(tmp_path, *common, "--cpu-rows", "nonesuch:fp32")
    assert done.returncode == 2 and "unknown workload(s) nonesuch" in done.stderr

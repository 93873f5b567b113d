"""The result document as types: what the suite writes, what a backend adds, what a results folder holds.

``schemas/result.schema.json`` is the contract and is checked first; these types are what the code may
assume once it holds (``results.documents.check`` applies them after validation). They only name what
code reads or writes: a block the schema keeps open (the host, the GPU's facts) stays a mapping.
Needs only the standard library, like the rest of the suite, which runs in the cell's Python.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, TypedDict

if TYPE_CHECKING:  # the annotations are never evaluated, so the cell's Python needs no typing_extensions
    from typing_extensions import NotRequired

Dtype = Literal["fp32_default", "fp32", "tf32", "bf16", "fp16"]  # a precision mode (``precision``)
Timer = Literal["cuda_graph", "cuda_event", "perf_counter"]
GpuAccessMode = Literal["toolkit", "cdi", "devices"]  # how a docker cell's container reaches the GPUs
StopReason = Literal["noise_target", "time_budget", "max_samples", "timeout", "timed_floor", "short_loop"]


class Knobs(TypedDict):
    cudnn_benchmark: bool
    deterministic: bool
    tf32: bool


class Stats(TypedDict):
    n: int
    min: float
    q1: float
    median: float
    q3: float
    max: float
    mean: float
    stdev: float
    rel_stdev: float
    rel_iqr: float


class Numerics(TypedDict):
    digest: str
    bitwise_repeatable: bool
    nan_count: int
    inf_count: int
    tolerance_rel_rmse: NotRequired[float | None]
    rel_rmse: NotRequired[float]
    max_abs_error: NotRequired[float]
    within_tolerance: NotRequired[bool]
    reference_error: NotRequired[str]


class Scaling(TypedDict):
    world_sizes: list[int]
    median_step_s: list[float]
    samples_per_s: list[float]
    efficiency: float | None


class Operator(TypedDict):
    name: str  # aten::...
    calls: int


class Kernel(TypedDict):
    name: str
    calls: int
    share: float  # of the profiled call's GPU time


class WhatRan(TypedDict):
    """What one profiled call (never a sample) ran: ``harness/suite/probes/what_ran.py``."""

    operators: list[Operator]
    kernels: NotRequired[list[Kernel]]  # on a GPU
    kernel_time_s: NotRequired[float]
    attention_backend: str | None  # the SDPA backend torch chose, where attention ran
    cudnn_used: bool  # an operator of cuDNN's ran (convolution, attention, RNN, batch norm)
    profile_s: float  # what recording it cost


class GpuStateDelta(TypedDict, total=False):
    """What NVML saw change around a measurement (``suite/probes/gpu_state.py``); empty without NVML."""

    clock_event_reasons_after: int | None  # the throttle reasons' bit mask at the end
    temperature_c: list[int | None]  # before, after
    power_violation_ns: int  # held back by the power limit meanwhile, where NVML said both times
    thermal_violation_ns: int


class MathFlags(TypedDict):
    """The math flags in effect while a row ran (suite 0.20; ``harness.suite.precision.flags``)."""

    cudnn_allow_tf32: bool
    matmul_allow_tf32: bool
    float32_matmul_precision: NotRequired[str]  # highest, high, medium
    fp32_precision: NotRequired[dict[str, str]]  # cuda.matmul, cudnn.conv, cudnn.rnn: none, ieee, tf32, bf16


class Measurement(TypedDict):
    """One workload at one dtype under one set of knobs; the timing keys are there when status is ok."""

    workload: str
    dtype: Dtype
    knobs: Knobs
    math_flags: NotRequired[MathFlags]
    status: Literal["ok", "unsupported", "error"]
    error: NotRequired[str]
    params: NotRequired[dict[str, Any]]
    timer: NotRequired[Timer]
    graph_capture_error: NotRequired[str | None]
    l2_flushed: NotRequired[bool]
    batch: NotRequired[
        int
    ]  # calls per sample, back to back in one graph replay (suite 0.11; the suite times 1)
    graphs: NotRequired[int]  # graphs of the call taken in turn, one a sample (suite 0.11)
    stalled: NotRequired[str]  # why a CPU measurement's samples show a busy host (suite 0.11)
    clock: NotRequired[Literal["wall", "thread_cpu"]]  # a CPU's samples_s are in (suite 0.17, host.CPU_CLOCK)
    wall_stats: NotRequired[Stats]  # where clock is thread_cpu: the same calls' wall times (0.17)
    thread_cpu_stats: NotRequired[Stats]  # where clock is wall: the same calls' thread CPU times (0.17)
    window_medians_s: NotRequired[list[float]]  # a row's windows (CPU 0.12, GPU 0.15; timing/windows.py)
    contended_discarded: NotRequired[int]  # samples of the windows set aside as contended (suite 0.12)
    memory_stranded_bytes: NotRequired[int]  # GPU: what the allocator held with no tensor after it (0.15)
    unit: NotRequired[Literal["s"]]
    first_call_s: NotRequired[float]
    warmup_calls: NotRequired[int]
    samples_s: NotRequired[list[float]]
    # on a CPU, in flight only: the same calls in the clock they were not judged in (rows.py keeps their
    # statistics, wall_stats or thread_cpu_stats, in its place)
    other_samples_s: NotRequired[list[float]]
    timed_floor_s: NotRequired[float]  # the floor a raised loop stopped at (timing/measure.py)
    placement_pads_mib: NotRequired[list[int]]  # the pad each window held (suite 0.18, placement_pad_mib)
    stop_reason: NotRequired[StopReason]
    sampling_wall_s: NotRequired[float]
    wall_s: NotRequired[float]
    # wall seconds of each phase: build, first_call, warmup, graph_capture, block_fit, sampling, host_time,
    # peak_memory, what_ran, numerics (those that ran; suite 0.6)
    phases_s: NotRequired[dict[str, float]]
    stats: NotRequired[Stats]
    flops: NotRequired[float]
    bytes: NotRequired[float]
    tflops: NotRequired[float]
    gbps: NotRequired[float]
    launch_latency_hidden: NotRequired[bool]
    sm_clock_mhz: NotRequired[list[int | None] | None]
    throttled_discarded: NotRequired[int]
    idle_discarded: NotRequired[int]  # samples whose call may have been enqueued after their start (0.6)
    power_capped_discarded: NotRequired[int]  # samples the power limit slowed, dropped while resting (0.8)
    power_rest_s: NotRequired[float | None]  # GPU rest before each sample at the loop's end (0.8)
    peak_memory_bytes: NotRequired[int]
    pct_of_peak_flops: NotRequired[float]
    pct_of_peak_bandwidth: NotRequired[float]
    gpu_state: NotRequired[GpuStateDelta]
    numerics: NotRequired[Numerics]
    host_enqueue_s: NotRequired[float | None]
    launch_block_s: NotRequired[float | None]
    host_time_per_call_s: NotRequired[float | None]
    scaling: NotRequired[Scaling]
    what_ran: NotRequired[WhatRan]
    what_ran_error: NotRequired[str]  # why it could not be recorded; the timing stands


class CellRecord(TypedDict):
    id: str
    torch: str
    cudnn: str | dict[str, str]  # "bundled", "disabled", {"wheel": version}, {"system": version or path}
    base_image: str
    python: str


class Failure(TypedDict):
    stage: str
    reason: str
    log_tail: str


CudnnSourceKind = Literal["bundled", "wheel", "system", "disabled"]


class CudnnRequest(TypedDict):
    """The cuDNN the suite must find loaded (``--expect-cudnn``), as the orchestrator's
    ``CudnnExpectation.to_json`` writes it; the suite cannot import the plan, so it reads it as this."""

    source: CudnnSourceKind
    lib_dir: NotRequired[str]  # the folder every cuDNN library must load from
    version: NotRequired[str]  # the version torch must report


class CudnnRecord(TypedDict):
    requested: CudnnRequest
    enabled: bool
    available: bool
    runtime_version: str | None
    compile_version: str | None
    compatible_by_torch_rule: NotRequired[bool | None]
    compat_check_overridden: NotRequired[bool]
    loaded_libraries: list[str]
    loaded_dirs: NotRequired[list[str]]
    loaded_after_run: NotRequired[list[str]]  # mapped after the workloads ran (sub-libraries load lazily)
    distinct_builds: int
    verified: bool
    verification: str


class NcclRecord(TypedDict):
    """The NCCL torch loaded, checked against the NCCL wheel beside torch."""

    runtime_version: str | None  # None: torch was built without NCCL
    wheel_version: str | None  # nvidia-nccl-cuNN beside torch, where there is one
    loaded_libraries: list[str]
    verified: bool
    verification: str


class HostFacts(TypedDict, total=False):
    """The machine (``harness/suite/probes/environment.py``); the schema keeps the block open."""

    hostname: str
    os: str
    kernel: str
    machine: str
    cpu_model: str | None
    cpu_count: int | None


class PythonFacts(TypedDict, total=False):
    version: str
    implementation: str
    executable: str


class TorchFacts(TypedDict, total=False):
    version: str
    git_version: str | None
    cuda: str | None
    debug: bool
    path: str
    num_threads: int


class GpuFacts(TypedDict, total=False):
    """The GPU as CUDA and nvidia-smi describe it; the schema keeps the block open."""

    index: int
    name: str
    uuid: str | None
    capability: str  # major.minor
    total_memory_bytes: int
    multiprocessors: int
    l2_cache_bytes: int | None
    device_count: int
    nvidia_smi: dict[str, str] | None  # nvidia-smi's fields, as it prints them
    driver_version: str | None


class Environment(TypedDict):
    host: HostFacts
    python: PythonFacts
    torch: TorchFacts
    gpu: GpuFacts | None  # None on the CPU
    env: dict[str, str]
    gpu_state: NotRequired[dict[str, object] | None]  # NVML's facts that do not change during a run


class Identity(TypedDict):
    """What a kept result must have been made with: resume keeps a result only where this is equal."""

    suite_version: str
    suite_settings_sha256: str
    suite_source_sha256: NotRequired[str]  # local: the suite's code (docker: the image's tag covers it)
    image: NotRequired[str]  # docker: the image's tag, the hash of its inputs
    python: NotRequired[str]  # local: the interpreter and its torch
    torch: NotRequired[str]
    environment: NotRequired[str]  # local, a concrete torch: the lock sha256 of the cell's environment
    cudnn_wheel: NotRequired[str]  # local: the cuDNN release a wheel cell loads


class SlurmRecord(TypedDict):
    job: str
    node: str
    partition: NotRequired[str]


class GpuAccess(TypedDict):
    mode: GpuAccessMode
    attached: NotRequired[bool]
    gpus: NotRequired[list[str]]
    cdi_devices: NotRequired[list[str]]
    device_nodes: NotRequired[list[str]]
    driver_dir: NotRequired[str]


class K8sRecord(TypedDict):
    image: str
    job: str
    completion_index: int


class RunRecord(TypedDict):
    """How a backend ran the suite: added by the orchestrator, never by the suite."""

    backend: Literal["local", "docker", "k8s"]
    command: list[str]
    exit_code: int | None
    wall_s: float
    log: str
    env_overrides: NotRequired[dict[str, str]]
    harness_version: NotRequired[str]
    matrix_sha256: NotRequired[str]
    plan_sha256: NotRequired[str]  # the plan.json the result was made for (harness/results/folder.py)
    image: NotRequired[dict[str, Any]]  # reference, id, digests, base, the Python and torch inside
    container: NotRequired[dict[str, object]]  # id, user, read-only root, network, capabilities, limits
    container_start_s: NotRequired[float]
    rerun_of: NotRequired[str]
    round: NotRequired[int]
    identity: NotRequired[Identity]
    gpus: NotRequired[list[str]]
    slurm: NotRequired[SlurmRecord]
    k8s: NotRequired[K8sRecord]
    gpu_access: NotRequired[GpuAccess]
    environment: NotRequired[dict[str, object]]  # local, a concrete torch: path, lock_sha256, distributions


class HostRecord(TypedDict):
    """The host as it bears on CPU timings (suite 0.11; harness/suite/probes/host.py)."""

    cores: int
    threads: int | None
    allocator: NotRequired[str]  # on a CPU, glibc's settings that keep freed memory (suite 0.12)
    load_start: float | None
    load_end: float | None
    busy: bool
    why: str


class SuiteResult(TypedDict):
    """What the suite writes: a run of it in one cell, before a backend adds how it ran."""

    schema_version: int
    suite_version: str
    cell: CellRecord
    profile: NotRequired[Literal["smoke", "default", "full", "atlas"]]
    device: NotRequired[Literal["cuda", "cpu"]]
    status: Literal["ok", "failed"]
    failure: Failure | None
    started_at: str
    finished_at: str
    duration_s: float
    # wall seconds of each step before the first measurement: import_torch, cudnn_probe (with the CUDA
    # context's creation), environment, gpu_state, timer (suite 0.6)
    setup_s: NotRequired[dict[str, float]]
    warnings: list[str]
    cudnn: NotRequired[CudnnRecord]
    nccl: NotRequired[NcclRecord]
    environment: NotRequired[Environment]
    measurements: list[Measurement]
    host: NotRequired[HostRecord]


class ResultDocument(SuiteResult):
    """A stored result: ``<results>/<cell id>[.round<n>].json.gz``, the suite's document and its run."""

    run: RunRecord

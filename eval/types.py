"""The evaluator's typed request and result (standard library only: eval/ runs on bare GPU hosts)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

# Stages in the order the evaluator walks them; a result names the one it reached or failed in.
STAGES = ("static", "load", "compile", "correctness", "timing", "done")
TIMING_MODES = ("full", "rank")


@dataclass
class EvalOptions:
    device: str = "cuda"
    """'cuda' or 'cpu'; on 'cpu' Triton runs under its interpreter and timings are CPU timings."""
    size: str = "full"
    """'full' problem sizes, or 'small' (the problem's SMALL overrides)."""
    trials: int = 5
    """Correctness trials with fresh inputs from get_inputs(); perturbed trials come on top."""
    timeout_s: float = 600.0
    """Wall-clock limit for the whole child process; on expiry its process group is killed."""
    baselines: bool = True
    """Time eager and torch.compile in the same worker (torch.compile only on CUDA)."""
    baselines_in: str = "auto"
    """Where eager and torch.compile are timed (eval/judge/baselines.py): 'process' (a process of their
    own, timed exactly as the candidate is), 'judge' (in the judge, on its own inputs) or 'auto'
    (the process on CUDA, the judge on the CPU, where a timing is never a speedup)."""
    precision: str = "default"
    """Precision policy (eval/precision.py): 'default' (PyTorch's flags: TF32 convolutions, IEEE
    matmuls), 'strict' (IEEE fp32 everywhere) or 'tf32'; candidate, yardstick and baselines alike."""
    atol: float | None = None
    """Absolute tolerance; None = 1e-4 for fp32 outputs, 1e-2 for fp16/bf16."""
    rtol: float | None = None
    """Relative tolerance; None = as atol."""
    seed: int = 0
    """No longer seeds anything: the judge draws every seed (weights, inputs) from the OS per
    evaluation, so no option predicts an input. Kept so stored requests still parse."""
    timing_budget_s: float = 2.0
    """Target seconds of timed runs per model (candidate, eager, compile)."""
    timing: bool = True
    """Run the timing stage. Off only where the question is correctness alone (the authors'
    tests: a CPU timing under Triton's interpreter is no speedup, and its checks of timed runs are
    tested on their own): such a result has no runtime, and nothing in the graph turns it off."""
    profile: bool = False
    """Also collect a torch.profiler kernel breakdown of one candidate call (CUDA only)."""
    work: list[float] | None = None
    """[FLOPs, bytes, convolution FLOPs] of the reference's forward as an earlier evaluation of the
    same problem, size and policy counted them (the result's flops, bytes and conv_flops): the
    timing stage then takes them instead of counting again (a pair, from before convolutions were
    counted apart, counts none). They describe the reference, never the candidate; counting
    imports torch._dynamo (4-6 s of an evaluation on an H200 host)."""

    known_baselines: list[float | None] | None = None
    """[eager_ms, compile_ms] as an earlier evaluation of the same problem, size, policy and device
    timed them (its eager_ms and compile_ms): the judge then reuses them instead of timing the
    reference again. The caller's own measurement handed back, never the candidate's; the result's
    baselines_in says 'reused'."""
    timing_mode: str = "full"
    """'full': the timing protocol (the delivered candidate's numbers); 'rank': the same protocol
    with fewer timed runs, enough to rank an intermediate candidate against the best so far."""
    tuning: dict[str, str] | None = None
    """Autotuning records an earlier evaluation of the same run harvested (EvalResult.tuning), put
    in a 'rank' evaluation's fresh Triton cache so it does not re-tune kernels it shares with
    earlier candidates; ignored under 'full' (eval/judge/tuning.py says why that is safe)."""

    def reused_baselines(self) -> tuple[float, float | None] | None:
        """(eager_ms, compile_ms) handed over in known_baselines, or None."""
        known = self.known_baselines
        if not known or known[0] is None or float(known[0]) <= 0:
            return None
        return float(known[0]), (float(known[1]) if len(known) > 1 and known[1] else None)

    def times_baselines(self) -> bool:
        """Whether this evaluation times eager and torch.compile itself: asked for, and not
        handed over from an earlier evaluation of the same problem."""
        return self.timing and self.baselines and self.reused_baselines() is None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvalOptions:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        if data.get("allow_tf32"):  # requests written before the three policies
            values["precision"] = "tf32"
        return cls(**values)


def handed_work(result: Any) -> list[float] | None:
    """`EvalOptions.work` for a later evaluation of the same problem, size and policy, from an
    evaluation's result or a verdict that keeps its fields: [flops, bytes, conv_flops], the pair
    where convolution FLOPs were not counted apart (a verdict checkpointed before they were), None
    where nothing was counted."""
    flops, nbytes = getattr(result, "flops", None), getattr(result, "bytes", None)
    if flops is None or nbytes is None:
        return None
    conv = getattr(result, "conv_flops", None)
    return [flops, nbytes] + ([conv] if conv is not None else [])


@dataclass
class EvalResult:
    correct: bool = False
    stage: str = "static"
    reason: str | None = None
    failed_checks: list[str] = field(default_factory=list)
    runtime_ms: float | None = None
    eager_ms: float | None = None
    compile_ms: float | None = None
    speedup_vs_eager: float | None = None
    speedup_vs_compile: float | None = None
    floor_ms: float | None = None
    custom_kernels: int = 0
    device: str = "cpu"
    timing_is_cpu: bool = True
    # Beyond the command's contract: evidence a reader of the JSON can check.
    usage_error: bool = False
    """The problem file or the invocation is unusable (CLI exit code 2), not the candidate."""
    pass_rule: str | None = None
    """Which correctness rule passed: 'tolerance' or 'fp32-error-multiple'."""
    max_abs_err: float | None = None
    """Worst absolute error against the float64 reference over all trials."""
    torch_fp32_err: float | None = None
    """PyTorch's own error against the float64 reference on the same inputs, under the precision
    policy's flags (the baselines' flags): the yardstick of the error-multiple rule."""
    trials_run: int = 0
    perturbed_trials: int = 0
    degenerate: bool = False
    """The reference output barely changes across trials: correctness is weakly certified."""
    wall_ms: float | None = None
    """Wall-clock cross-check per call, full device synchronize included."""
    idle_ms: float | None = None
    """The candidate process's host clock per call from its start event until the whole device
    was idle: far above runtime_ms, work escaped the events (timing.escapes_events)."""
    protocol_ms: float | None = None
    """What a run costs besides the forward, by the judge's clock: the median wall time of a null
    forward (the same command and protocol around a forward that does nothing), measured between
    the timed runs. wall_ms is the median run's wall time less this."""
    reported_ms: float | None = None
    """The candidate process's own median time per forward (its CUDA events, or its host clock on
    the CPU): a cross-check of the judge's clock (far below wall_ms: check `clock_mismatch`). On the
    GPU runtime_ms comes from these events, on the CPU from the judge's clock."""
    copy_ms: float | None = None
    """The candidate process's median time to describe its output and copy it into the judge's
    slots: what exceeds a null forward's copy is deferred work and counts in runtime_ms."""
    noise: float | None = None
    """Run-to-run spread of the candidate's timed runs (interquartile range / median): a gain
    smaller than this is not a measured gain."""
    timed_runs: int | None = None
    """How many timed runs `runtime_ms` is the median of (with `noise`: how sure that median is)."""
    flops: float | None = None
    bytes: float | None = None
    conv_flops: float | None = None
    """The convolutions' share of `flops`: the floor counts them at the rate the policy allows
    convolutions (TF32 under `default`), the rest at its matmul rate (eval/timing/roofline.py)."""
    kernel_names: list[str] = field(default_factory=list)
    precision_policy: str = "default"
    """The policy candidate, yardstick and baselines ran under (eval/precision.py)."""
    precision_flags: dict[str, Any] = field(default_factory=dict)
    """The PyTorch flags that policy set, on both sides."""
    baselines_in: str | None = None
    """Where eager and torch.compile were timed: 'process' (the reference in a process of its own,
    by the candidate's protocol), 'process+judge' (torch.compile fell back to the judge), 'judge', or
    'reused' (handed over from an earlier evaluation: EvalOptions.known_baselines)."""
    timing_mode: str = "full"
    """The timing protocol's extent this result was timed under (EvalOptions.timing_mode)."""
    gpu_name: str | None = None
    tuning: dict[str, str] = field(default_factory=dict)
    """The candidate's autotuning records (Triton's `*.autotune.json`, rebuilt by the judge from
    plain values: eval/judge/tuning.py), for later 'rank' evaluations of the same run."""
    contended: bool = False
    """Judged beside other candidates (eval/batch.py), the GPU was still busy when this one's turn
    came (eval/judge/gate.py): its timing is not believed, and it is judged again by itself."""
    elapsed_s: float | None = None
    stage_seconds: dict[str, float] = field(default_factory=dict)
    """Where the evaluation's wall time went: the judge's own stages (load, compile, correctness,
    timing), the static checks before it, and "processes": starting the judge (interpreter,
    sandbox, imports) and ending it, the part of the child's wall time outside its own clock;
    "parent": the caller's bookkeeping around the child. Dotted keys split a stage further
    ("timing.eager", "correctness.reference", "processes.start": the judge's start-up alone) and
    are already counted in their stage's key."""
    kernel_breakdown: list[dict[str, Any]] = field(default_factory=list)
    """With options.profile: per-kernel CUDA time of one candidate call (name, time_us, launches)."""
    peak_memory_mb: dict[str, float] = field(default_factory=dict)
    """The judge's peak memory in MiB per stage (load, compile, correctness, timing) and per part
    of a stage (reference: computing the reference's outputs; compare: judging an output); on CUDA
    its allocator's peak plus "device", the card's use by every process sampled at the same points
    (eval/judge/memory.py); on the CPU the judge process's resident high-water mark."""
    log_tail: str = ""
    """Last lines of the worker's stderr (warnings, tracebacks) for the repairer."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvalResult:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def fail(self, stage: str, reason: str, *checks: str) -> EvalResult:
        self.correct, self.stage, self.reason = False, stage, reason
        self.failed_checks.extend(checks)
        return self


class Rejected(Exception):
    """A candidate failed a stage; carries the stage, a one-line reason and check names."""

    def __init__(self, stage: str, reason: str, *checks: str):
        super().__init__(reason)
        self.stage, self.reason, self.checks = stage, reason, checks

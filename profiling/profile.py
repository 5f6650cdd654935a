"""Where a forward's GPU time goes: kernel timeline, speed of light and Nsight Compute, in a child.

    result = profile(problem_source, candidate_source_or_None, ProfileOptions())

One child process in the evaluator's sandbox (`child.run_child`: no secrets, own process group,
killed at the deadline) profiles the candidate, or the reference when there is none:
build and warm up -> a torch.profiler timeline of one forward (each kernel's time, launches,
grid, idle gaps) -> CUDA-event timing -> minimum bytes, FLOPs and the floor -> when `ncu` is on
PATH and time is left, Nsight Compute on one more forward of the dominating kernels. ncu gets
a process of its own (`ncu ... python -m kernelskill.profiling.profile --ncu-target REQ`) because
torch.profiler records no kernels inside an ncu-profiled process. A candidate whose forward
replays a CUDA graph (authors/builtin/runtime/graph_forward.py) is timed and timelined as it
replays, and ncu measures the same kernels launched without replay (`forward_for_counters`). A
profile is advice, not a verdict: nothing here certifies correctness (that is `api.evaluate`).
"""

from __future__ import annotations

import ast
import gc
import json
import shutil
import subprocess
import sys
import time
import traceback
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from ..eval import precision
from ..eval.child import run_child
from ..eval.problem import CandidateError, ProblemError, check_problem_source, load_candidate, load_problem
from ..eval.sandbox.env import child_exit
from ..eval.sandbox.signing import sign
from ..eval.static.checks import problem_is_fp32, run_static_checks
from . import ncu as N
from .timeline import (
    KernelTime,
    Launch,
    Timeline,
    attach_ncu,
    launches_from_trace,
    ncu_selection,
    timeline_of,
)

# Rationale: ncu needs ~5 s before its first profiled kernel (its own start, Python and torch
# import, CUDA context, model build, warm-up); with less time left it would profile nothing.
NCU_MIN_S = 6.0
# Seconds the parent waits past the budget (interpreter start, imports) before killing the child.
GRACE_S = 10.0


@dataclass
class ProfileOptions:
    device: str = "cuda"
    """'cuda'; on 'cpu' only the CPU time, FLOPs and bytes are measured (tests, plumbing)."""
    size: str = "full"
    precision: str = "default"
    """The precision policy the model runs under (eval/precision.py)."""
    seed: int = 0
    budget_s: float = 25.0
    """Start, timeline, timing and the FLOP count; Nsight Compute has its own `ncu_budget_s`."""
    ncu_budget_s: float = 30.0
    """Nsight Compute's own seconds: one shared budget left it nothing on three level-3 problems of
    an H100 (21-25 s of 25 went before it: problems/measurements/h100-2026-12-06-rounds/call5.log)."""
    work: list[float] | None = None
    """[FLOPs, bytes, conv FLOPs] of the reference as the evaluation counted them (a pair counts no
    conv FLOPs), not counted again: the count imports torch._dynamo, seconds of a profile."""
    ncu: bool = True
    """Run Nsight Compute when `ncu` is on PATH."""
    ncu_launches: int = 8
    """At most this many launches are profiled by ncu, the dominating kernels first."""
    ncu_without_replay: bool = True
    """ncu profiles a graph-replay candidate's kernels launched without replay (`_eager_forward`);
    False: inside the replay, as the timeline ran them (a diagnostic)."""
    timing_budget_s: float = 0.5

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProfileOptions:
        return cls(**{k: v for k, v in data.items() if k in {f.name for f in fields(cls)}})


@dataclass
class ProfileResult:
    ok: bool = False
    stage: str = "load"
    reason: str | None = None
    usage_error: bool = False
    device: str = "cuda"
    subject: str = "reference"  # 'candidate' or 'reference': what was profiled
    size: str = "full"
    precision_policy: str = "default"
    gpu_name: str | None = None
    runtime_ms: float | None = None
    """Median CUDA-event time per forward, L2 flushed (CPU wall time on 'cpu')."""
    flops: float | None = None
    bytes: float | None = None
    floor_ms: float | None = None
    bandwidth_gbs: float | None = None
    fp32_tflops: float | None = None
    sm_count: int | None = None
    timeline: Timeline | None = None
    graph_replay: bool = False
    """The timeline's forward replayed a CUDA graph the runtime's wrapper kept (graph_forward.py)."""
    ncu_status: str = "not run"
    ncu_s: float | None = None
    stage_s: dict[str, float] = field(default_factory=dict)
    """Seconds of each stage in the child (load: build, import; timeline: warm-up with its compiles
    and autotuning, then the traced forward; ncu: Nsight Compute's run)."""
    elapsed_s: float | None = None  # seconds inside the child, from its request to its result
    wall_s: float | None = None
    """Seconds the parent waited, interpreter start and imports included: the cost of a profile."""
    log_tail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProfileResult:
        known = {f.name for f in fields(cls)}
        out = cls(**{k: v for k, v in data.items() if k in known and k != "timeline"})
        if tl := data.get("timeline"):
            kernels = [KernelTime(**{**k, "ncu": N.NcuKernel(**k["ncu"]) if k.get("ncu") else None})
                       for k in tl["kernels"]]
            out.timeline = Timeline(**{**tl, "kernels": kernels})
        return out


# ---- the parent side --------------------------------------------------------------------
def profile(problem_source: str, candidate_source: str | None = None, options: ProfileOptions | None = None,
            *, problem_name: str = "problem.py", candidate_name: str = "candidate.py",
            tuning: dict[str, str] | None = None) -> ProfileResult:
    """Profile the candidate (or the reference) in one sandboxed child within `budget_s`.

    `tuning`: the run's autotuning picks (eval/judge/tuning.py), seeded into the child's own Triton
    cache so that its warm-up compiles each tuned kernel once instead of re-running its autotuner.
    Safe for the reason rank evaluations take them: a pick only chooses launch parameters of the
    candidate's own kernels, and a profile steers the planner; it reports no delivered number."""
    opts = options or ProfileOptions()
    r = ProfileResult(device=opts.device, size=opts.size, subject="reference" if candidate_source is None
                      else "candidate", precision_policy=opts.precision)
    try:
        check_problem_source(problem_source, problem_name)
        if candidate_source is not None:
            ast.parse(candidate_source, filename=candidate_name)
    except ProblemError as e:
        r.usage_error, r.reason = True, str(e)
        return r
    except SyntaxError as e:
        r.reason = f"{candidate_name}:{e.lineno}: syntax error: {e.msg}"
        return r
    if candidate_source is not None and (bad := run_static_checks(
            candidate_source, fp32_problem=problem_is_fp32(problem_source), precision=opts.precision)):
        r.stage, r.reason = "static", f"{bad[0].message} (the evaluator would reject this candidate)"
        return r
    run = run_child("kernelskill.profiling.profile", request(problem_source, candidate_source, opts,
                                                          problem_name, candidate_name),
                    opts.device, limit_s(opts), tuning=tuning)
    if run.payload is None:
        r.stage, r.log_tail, r.wall_s = run.stage, run.log_tail, run.elapsed_s
        r.reason = (f"timed out after {limit_s(opts):g} s during {run.stage}" if run.timed_out
                    else f"profiler crashed during {run.stage} {run.crash_reason()}")
        return r
    out = ProfileResult.from_dict(run.payload)
    out.log_tail, out.wall_s = run.log_tail, run.elapsed_s
    return out


def limit_s(opts: ProfileOptions) -> float:
    """The most seconds a profiling child may take: its budget, Nsight Compute's, the grace."""
    return opts.budget_s + (opts.ncu_budget_s if opts.ncu and opts.device == "cuda" else 0.0) + GRACE_S


def request(problem_source: str, candidate_source: str | None, opts: ProfileOptions,
            problem_name: str = "problem.py", candidate_name: str = "candidate.py") -> dict[str, Any]:
    """What the child (or `measure`, called in-process on trusted code) is asked to do."""
    return {"problem_source": problem_source, "candidate_source": candidate_source,
            "problem_name": problem_name, "candidate_name": candidate_name,
            "options": asdict(opts), "deadline": time.time() + opts.budget_s}


# ---- the child side ---------------------------------------------------------------------
def measure(req: dict[str, Any], progress: Path | None = None, scratch: Path | None = None) -> ProfileResult:
    """Everything the child does; also callable in-process on trusted code (the suite script)."""
    import torch

    from ..eval.timing import roofline
    from ..eval.timing.protocol import Timer

    opts = ProfileOptions.from_dict(req["options"])
    started = time.time()
    scratch = scratch or Path.cwd()
    cuda = opts.device == "cuda"
    r = ProfileResult(device=opts.device, size=opts.size, subject="reference" if req["candidate_source"]
                      is None else "candidate", precision_policy=opts.precision)

    mark = [started]

    def stage(name: str) -> None:
        now = time.time()
        r.stage_s[r.stage], mark[0] = round(now - mark[0], 2), now
        r.stage = name
        if progress is not None:
            progress.write_text(name)

    try:
        stage("load")
        if cuda and not torch.cuda.is_available():
            raise ProblemError("CUDA requested but no GPU is visible to PyTorch; use --device cpu")
        given = roofline.Work.given(opts.work)
        ref, model, inputs = _build(req, opts, need_ref=given is None)
        stage("timeline")
        launches: list[Launch] = []
        with torch.no_grad(), precision.applied(precision.policy(opts.precision)):
            for _ in range(2):  # warm-up: Triton compiles, cuBLAS/cuDNN pick their algorithms
                model(*inputs)
            if cuda:
                torch.cuda.synchronize()
                r.gpu_name = torch.cuda.get_device_name()
                r.sm_count = torch.cuda.get_device_properties(0).multi_processor_count
                launches = record_launches(model, inputs, scratch / "trace.json")
                r.timeline, r.graph_replay = timeline_of(launches), replays_graph(model)
            stage("timing")
            timer = Timer(opts.device, budget_s=opts.timing_budget_s, min_runs=5 if cuda else 2, max_runs=100)
            r.runtime_ms = timer.time(model, [inputs], warmup=1).median_ms
        stage("work")
        work = given or roofline.count_work(ref, inputs)
        r.flops, r.bytes = work.flops, work.bytes
        if cuda:
            c = roofline.load_ceilings()
            r.floor_ms = roofline.policy_floor_ms(work, c, precision.policy(opts.precision))
            r.bandwidth_gbs, r.fp32_tflops = c.bandwidth_gbs, c.fp32_tflops
        del ref, model, inputs, timer
        gc.collect()
        if cuda:
            torch.cuda.empty_cache()  # the ncu process needs the memory
        r.ncu_status = "not run: " + ("disabled" if not opts.ncu else "no GPU" if not cuda
                                      else "ncu not found on PATH")
        if cuda and opts.ncu and (exe := shutil.which("ncu")) and r.timeline is not None:
            stage("ncu")
            t = time.time()
            r.ncu_status = run_ncu(exe, req, opts, launches, r.timeline, t + opts.ncu_budget_s, scratch,
                                   r.graph_replay)
            r.ncu_s = round(time.time() - t, 2)
        r.ok = True
        stage("done")
    except ProblemError as e:
        r.usage_error, r.reason = True, str(e)
    except CandidateError as e:
        r.reason = str(e)
    except Exception as e:  # a candidate that fails here failed its evaluation too: report, not crash
        r.reason = f"{type(e).__name__}: {' '.join(str(e).split())[:400]}"
    r.elapsed_s = round(time.time() - started, 2)
    return r


def _build(req: dict[str, Any], opts: ProfileOptions, need_ref: bool = True) -> tuple[Any, Any, list[Any]]:
    """(reference, the model to profile, inputs); the reference is None when not needed."""
    from ..eval import harness as H

    problem = load_problem(req["problem_source"], opts.size, req["problem_name"])
    cand = req["candidate_source"]
    ref = H.build(problem.model_cls, problem, opts.seed, opts.device) if need_ref or cand is None else None
    model = ref
    if cand is not None:
        module = load_candidate(cand, req["candidate_name"])
        model = H.build(module.ModelNew, problem, opts.seed, opts.device)
    return ref, model, H.make_inputs(problem, opts.seed, opts.device)


def record_launches(model: Any, inputs: list[Any], trace_path: Path) -> list[Launch]:
    """One forward under torch.profiler (CUDA activity only: least host overhead), L2 flushed first."""
    import torch
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    from ..eval.timing.protocol import FLUSH_BYTES

    torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda").zero_()
    torch.cuda.synchronize()
    with torch_profile(activities=[ProfilerActivity.CUDA]) as prof:
        model(*inputs)
        torch.cuda.synchronize()
    try:
        prof.export_chrome_trace(str(trace_path))
        launches = launches_from_trace(json.loads(trace_path.read_text()))
    except (OSError, ValueError, KeyError, TypeError):
        launches = []
    if not launches:  # older Kineto traces: names and times only
        launches = sorted((Launch(e.name, float(e.time_range.start), float(e.device_time))
                           for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA
                           and e.device_time > 0), key=lambda x: x.start_us)
    return launches


def run_ncu(exe: str, req: dict[str, Any], opts: ProfileOptions, launches: list[Launch], tl: Timeline,
            deadline: float, scratch: Path, graph_replay: bool = False) -> str:
    """Nsight Compute on one forward in a grandchild; attaches metrics to `tl`; returns a status
    ('ok: ...', or what went wrong: 'skipped: ...', 'failed: ...').

    A retry drops what this ncu refused: the raw metrics (sections only), `--graph-profiling`."""
    regex, count = ncu_selection(launches, tl, opts.ncu_launches)
    target = scratch / "ncu_request.json"
    out = scratch / "ncu.csv"
    metrics, graph_nodes = True, True
    for _ in range(3):
        left = deadline - time.time() - 0.5
        if left < NCU_MIN_S:
            return f"skipped: {max(left, 0):.0f} s of the budget left, ncu needs ~{NCU_MIN_S:g}"
        target.write_text(json.dumps(req))
        cmd = N.command(exe, [sys.executable, "-P", "-m", "kernelskill.profiling.profile", "--ncu-target",
                              str(target)], kernel_regex=regex, launch_count=count, metrics=metrics,
                        graph_nodes=graph_nodes)
        try:
            with open(out, "wb") as f:
                proc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=scratch, timeout=left)
        except subprocess.TimeoutExpired:
            return f"failed: timed out after {left:.0f} s"
        text = out.read_text(errors="replace")
        rows = N.parse_csv(text)
        if rows:
            got = attach_ncu(tl, launches, rows, regex)
            tail = "" if metrics else " (sections only)"
            if graph_replay:
                tail += (" (graph kernels launched without replay)" if opts.ncu_without_replay
                         else " (graph kernels inside the replay)")
            return f"ok: launches profiled {len(rows)}, kernels {got}{tail}"
        if graph_nodes and N.unknown_option(text, "--graph-profiling"):
            graph_nodes = False
        elif metrics and N.unknown_metric(text):
            metrics = False
        else:
            return "failed: " + (N.failure(text) or f"no kernel profiled (ncu exit code {proc.returncode})")
    return "failed: no kernel profiled"


def replays_graph(model: Any) -> bool:
    """Whether the runtime's graph-replay wrapper (authors/builtin/runtime/graph_forward.py) kept a
    graph for a signature it was called with, so that its forward replays rather than launches."""
    graphs = getattr(model, "_cuda_graphs", None)
    return isinstance(graphs, dict) and any(entry is not False for entry in graphs.values())


def forward_for_counters(model: Any) -> Any:
    """What ncu profiles: a graph-replay wrapper's own forward without replay (`_eager_forward`, the
    function its graph captured, so the same kernels launched one by one), else the model.

    Rationale: on an H200, in a sample of 19 problems, the 10 best candidates whose forward
    replayed a CUDA graph got no ncu counters and the others did. Launched without replay, the
    kernels are the ones the graph holds (same code, grids and inputs; ncu flushes caches before
    each either way), and ncu's process skips the capture and the replay-vs-plain timing calls."""
    eager = getattr(model, "_eager_forward", None)
    if isinstance(getattr(model, "_cuda_graphs", None), dict) and callable(eager):
        return eager
    return model


def _ncu_target(path: Path) -> int:
    """Inside ncu: build, warm up, then exactly one forward between cudaProfilerStart and Stop."""
    import torch

    req = json.loads(path.read_text())
    path.unlink()
    opts = ProfileOptions.from_dict(req["options"])
    _, model, inputs = _build(req, opts, need_ref=False)
    forward = forward_for_counters(model) if opts.ncu_without_replay else model
    with torch.no_grad(), precision.applied(precision.policy(opts.precision)):
        for _ in range(2):
            forward(*inputs)
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        forward(*inputs)
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    if args[:1] == ["--ncu-target"]:
        return _ncu_target(Path(args[1]))
    key = bytes.fromhex(sys.stdin.readline().strip())  # before any problem or candidate code runs
    req_path, res_path, progress = (Path(a) for a in args)
    req = json.loads(req_path.read_text())
    req_path.unlink()
    try:
        result = measure(req, progress)
    except BaseException as e:  # a harness error is still an outcome
        traceback.print_exc()
        result = ProfileResult(stage=progress.read_text().strip(), reason=f"profiler error: {e!r}"[:400])
    body = json.dumps(result.to_dict())
    res_path.write_text(json.dumps({"result": body, "mac": sign(key, body)}))
    return 0


if __name__ == "__main__":
    child_exit(main())

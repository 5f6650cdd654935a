"""Profiler: where the best candidate's time goes, as a typed Profile and a text signature.

On a GPU with Nsight Compute on PATH, the best candidate is profiled in a child process
(profiling/profile.py: kernel timeline, speed of light, ncu on the dominating kernels) whenever it
changed since the last profile and the run's clock allows. Otherwise the reviewer's torch.profiler
breakdown (no extra run) is used, and without a GPU a static profile is built from the captured
graph (op names, structures, full-size FLOPs and minimum bytes on the meta device).
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..profiling.ncu import base_name
from ..profiling.profile import ProfileOptions, ProfileResult, profile
from ..profiling.timeline import KernelTime
from ..state.graph_state import GraphState, Verdict
from ..state.records import KernelStat, Profile
from ..state.vocab import Structure
from . import classify as C
from .classify import OpDesc
from .limiter import has_counters, hot_kernels, set_limiters
from .reviewer import known_work

if TYPE_CHECKING:
    from ..eval.timing.roofline import Work

# Rationale: a profile with ncu is expected to take ~10-15 s on the H200 (child start ~3 s, timeline
# and timing ~2 s, ncu ~5-8 s; tests/gpu/profile_suite.py measures it); 25 s leaves room for a slow
# first Triton compile without letting one profile eat a round.
NODE_BUDGET_S = 25.0
# Run the profiling child only while the run's clock has room for a few more rounds after it.
MIN_CLOCK_LEFT_S = 4 * NODE_BUDGET_S
# Rationale: forward-level DRAM / SM / occupancy figures are only stated when the kernels ncu
# measured hold at least half the GPU time; otherwise they would describe the minority.
NCU_COVERAGE = 0.5
_REDUCTIONS = {"sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "prod", "logsumexp", "var",
               "std", "norm", "softmax", "log_softmax", "cumsum", "cumprod"}
_SKIP = {"view", "reshape", "flatten", "permute", "transpose", "t", "contiguous", "unsqueeze", "squeeze",
         "expand", "getitem", "size", "dim", "chunk", "split", "unbind", "getattr", "identity"}
_COMPARE = {">": "gt", "<": "lt", ">=": "ge", "<=": "le", "==": "eq", "!=": "ne", "//": "floor_divide",
            "%": "remainder"}


@dataclass
class OpSummary:
    """The reference forward's operators as the signature names them."""

    ops: list[OpDesc]
    names: list[str]
    """Distinct lowercase torch names, in forward order."""
    structures: list[Structure]
    compute_ops: int
    """Operators that launch work eagerly (views excluded): the static kernel-count estimate."""


def torch_name(kind: str, attrs: dict[str, Any], expr: str, module: Any = None) -> str | None:
    """The IR's canonical kind as a lowercase torch name (conv + dims 2 -> conv2d); ops the IR does not
    recognise (kind 'torch') are named from their call: torch.tril -> tril, self.lstm -> lstm."""
    if kind in _SKIP:
        return None
    if kind in ("conv", "conv_transpose", "max_pool", "avg_pool", "adaptive_avg_pool") and attrs.get("dims"):
        return f"{kind}{attrs['dims']}d"
    if kind != "torch":
        return kind
    if (m := re.match(r"self((?:\.\w+|\[\d+\])+)\(", expr)) and module is not None:
        sub = module
        for part in re.findall(r"\w+", m.group(1)):
            sub = sub[int(part)] if part.isdigit() else getattr(sub, part, None)
        if sub is not None:
            snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", type(sub).__name__).lower()
            return re.sub(r"(norm)[123]d$", r"\1", snake)
    if m := re.match(r"\(\S+ (>=|<=|==|!=|>|<|//|%) ", expr):
        return _COMPARE[m.group(1)]
    if m := re.search(r"([A-Za-z_]\w*)\(", expr):
        return m.group(1).rstrip("_").lower() or None
    return None


def _inner(kind: str, attrs: dict[str, Any], rank: int | None) -> bool | None:
    """Does a reduction reduce the innermost dimension? (None: not a reduction, or unknown.)"""
    if kind not in _REDUCTIONS or not rank:
        return None
    dim = attrs.get("dim")
    if dim is None or dim == ():
        return True  # a full reduction reads contiguously
    dims = dim if isinstance(dim, (list, tuple)) else [dim]
    try:
        return any(int(d) % rank == rank - 1 for d in dims)
    except (TypeError, ValueError):
        return None


def op_summary(source: str, path: str) -> OpSummary:
    """Operators of the reference forward (empty when it cannot be captured)."""
    from ..authors.builtin.frontend.capture import capture

    try:
        cap = capture(source, path or "<problem>", "small")
    except Exception:  # CaptureError, or a problem that fails on CPU: a thin profile, not a dead node
        return OpSummary([], [], ["elementwise"], 0)
    ops: list[OpDesc] = []
    for op in cap.program.ops:
        name = torch_name(op.kind, op.attrs, op.torch_expr, cap.module)
        if name and (op.out.is_tensor or op.tensor_inputs()):  # arithmetic on sizes launches nothing
            x = op.tensor_inputs()
            ops.append(OpDesc(name, _inner(op.kind, op.attrs, x[0].meta.rank if x else None)))
    names = list(dict.fromkeys(o.name for o in ops))
    return OpSummary(ops, names, C.structures_of(ops), len(ops))


def static_work(source: str, path: str, size: str = "full") -> Work | None:
    """FLOPs (convolutions apart too) and minimum bytes of the reference at `size`, on the meta
    device: shapes only, so full sizes cost nothing. None when the forward needs real data
    (data-dependent ops)."""
    import torch

    from ..eval.problem import load_problem
    from ..eval.timing.roofline import count_work

    try:
        problem = load_problem(source, size, path or "<problem>")
        with torch.device("meta"):
            model = problem.model_cls(*problem.get_init_inputs())
            inputs = list(problem.get_inputs())
        return count_work(model, inputs)
    except Exception:
        return None


# ---- building the Profile ----------------------------------------------------------------
def kernel_stat(kt: KernelTime, forward: list[Structure], bw_gbs: float | None,
                tflops: float | None) -> KernelStat:
    """A timeline kernel (with its ncu metrics, if any) as a classified KernelStat."""
    k = KernelStat(name=kt.name[:200], time_us=kt.time_us, share=kt.share, launches=kt.launches, kind=kt.kind,
                   structure=C.kernel_structure(kt.name, forward), grid=kt.grid, block=kt.block,
                   registers=kt.registers, blocks_per_sm=kt.blocks_per_sm, occupancy_pct=kt.occupancy_pct)
    if (n := kt.ncu) is not None:
        k.duration_us, k.dram_pct, k.l2_pct, k.l1_pct = n.duration_us, n.dram_pct, n.l2_pct, n.l1_pct
        k.sm_pct, k.tensor_pct = n.sm_pct, n.tensor_pct
        k.top_pipe, k.top_pipe_pct = n.top_pipe, n.top_pipe_pct
        k.occupancy_pct, k.theoretical_occupancy_pct = n.occupancy_pct, n.theoretical_occupancy_pct
        k.occupancy_limiter, k.waves, k.spill_requests = n.occupancy_limiter, n.waves, n.spill_requests
        k.registers, k.grid, k.block = n.registers or k.registers, n.grid or k.grid, n.block or k.block
        k.stalls, k.stall_reasons = dict(n.stalls), list(n.stalls)[:3]
        k.dram_bytes, k.flops = n.dram_bytes, n.flops
    k.bottleneck, k.rationale = C.classify_kernel(k)
    if n is not None and n.duration_us and bw_gbs and tflops:
        mem_us = (n.dram_bytes or 0.0) / (bw_gbs * 1e3)  # GB/s = 1e3 bytes per us
        math_us = (n.flops or 0.0) / (tflops * 1e6)  # TFLOP/s = 1e6 FLOPs per us
        k.bandwidth_pct = 100 * mem_us / n.duration_us
        k.flops_pct = 100 * math_us / n.duration_us if n.flops is not None else None
        # Without FLOP counts (sections only) the bytes alone bound only a memory-bound kernel.
        if max(mem_us, math_us) > 0 and (n.flops is not None or k.bottleneck == "memory-bound"):
            k.headroom = n.duration_us / max(mem_us, math_us)
    return k


def finish(p: Profile) -> Profile:
    """Derived figures, the classification and the signature of an assembled profile."""
    if p.source == "gpu" and p.runtime_ms:
        p.headroom = p.runtime_ms / p.floor_ms if p.floor_ms else None
        p.achieved_gbs = p.bytes / (p.runtime_ms * 1e6)
        p.achieved_tflops = p.flops / (p.runtime_ms * 1e9)
    measured = [k for k in p.kernels if k.dram_pct is not None and k.sm_pct is not None]
    weight = sum(k.share for k in measured)
    if measured and weight >= NCU_COVERAGE:
        p.dram_pct = sum(k.share * (k.dram_pct or 0) for k in measured) / weight
        p.sm_pct = sum(k.share * (k.sm_pct or 0) for k in measured) / weight
        p.occupancy_pct = sum(k.share * (k.occupancy_pct or 0) for k in measured) / weight
    d = C.diagnose(p)
    p.bottleneck, p.rationale, p.bottleneck_shares = d.bottleneck, d.rationale, d.shares
    set_limiters(p)
    if note := counters_note(p):
        p.notes.append(note)
    if p.headroom is not None and p.headroom < 1:
        p.notes.append(f"{p.headroom:.2f}x of the floor: faster than the precision policy's fastest legal "
                       "rates allow for the reference's FLOPs, so a cheaper algorithm did the work (or "
                       "a precision below the policy's)")
    if any("tf32" in k.name.lower() for k in p.kernels):
        p.notes.append("TF32 tensor-core kernels ran (cuDNN/cuBLAS defaults or --allow-tf32)")
    p.signature = C.signature_of(p)
    return p


def profile_from_result(r: ProfileResult, ops: OpSummary, subject: str | None = None) -> Profile:
    """The child's measurement (profiling/profile.py) as a Profile."""
    tl = r.timeline
    kernels = [kernel_stat(kt, ops.structures, r.bandwidth_gbs, r.fp32_tflops)
               for kt in (tl.kernels if tl else [])]
    p = Profile(source="gpu" if r.device == "cuda" else "static", bottleneck="memory-bound",
                structures=ops.structures, op_kinds=ops.names, flops=r.flops or 0.0, bytes=r.bytes or 0.0,
                floor_ms=r.floor_ms, runtime_ms=r.runtime_ms,
                kernel_count=tl.launches if tl else ops.compute_ops,
                kernels=kernels, subject=subject, gpu=r.gpu_name, precision_policy=r.precision_policy,
                bandwidth_gbs=r.bandwidth_gbs, peak_tflops=r.fp32_tflops, ncu_status=r.ncu_status,
                busy_ms=tl.busy_us / 1e3 if tl else None,
                seconds={**({"wall": round(r.wall_s, 2)} if r.wall_s is not None else {}), **r.stage_s})
    if tl and tl.launches and r.runtime_ms and r.device == "cuda":
        p.launch_gap_us = max(0.0, r.runtime_ms * 1e3 - tl.busy_us) / tl.launches
    if r.device != "cuda":
        p.notes.append("CPU run: no kernels, runtime is CPU wall time")
    if r.graph_replay:
        p.notes.append("the forward replays a CUDA graph: times and shares are of the replay (its input "
                       "copies included); ncu measured the same kernels launched without replay")
        if not any(k.kind == "kernel" for k in kernels):
            p.notes.append("the replay's timeline shows no kernels: the profiler (CUPTI) reported none "
                           "inside the graph, so no counters can be attached")
    return finish(p)


def profile_from_verdict(v: Verdict, ops: OpSummary, subject: str | None = None,
                         why: str = "the reviewer's breakdown") -> Profile:
    """The reviewer's torch.profiler breakdown (per-kernel time and launches, no ncu) as a Profile;
    `why` says why ncu did not run."""
    total = sum(k["time_us"] for k in v.kernel_breakdown)
    kernels = [kernel_stat(KernelTime(name=k["name"], time_us=k["time_us"], launches=k["launches"],
                                      share=k["time_us"] / total if total else 0.0,
                                      kind="memset" if k["name"].startswith("Memset") else
                                      "memcpy" if k["name"].startswith("Memcpy") else "kernel"),
                           ops.structures, None, None) for k in v.kernel_breakdown]
    launches = sum(k.launches for k in kernels)
    p = Profile(source="gpu" if kernels else "static", bottleneck="memory-bound", structures=ops.structures,
                op_kinds=ops.names, flops=v.flops or 0.0, bytes=v.bytes or 0.0, floor_ms=v.floor_ms,
                runtime_ms=v.runtime_ms, kernel_count=launches or ops.compute_ops, kernels=kernels,
                subject=subject, gpu=v.gpu_name, busy_ms=total / 1e3 if total else None,
                ncu_status=f"not run: {why}")
    if total and v.runtime_ms and launches:
        p.launch_gap_us = max(0.0, v.runtime_ms * 1e3 - total) / launches
        p.notes.append("breakdown from one call without an L2 flush: idle time is an upper bound")
    return finish(p)


def static_profile(ops: OpSummary, work: Work | None, why: str = "no GPU") -> Profile:
    """No GPU: structure, ops, FLOPs and bytes; the floor on the reference H200's ceilings. Those
    hold no tensor-core rate, so every FLOP (convolutions too, whatever the policy) counts at its
    fp32 cuBLAS rate: what roofline.floor_ms gives on them under any policy. A compute-bound
    static floor is thus an estimate above what tensor cores reach, not a bound."""
    flops, nbytes = (work.flops, work.bytes) if work else (0.0, 0.0)
    bw, peak = C.REFERENCE_BANDWIDTH_GBS, C.REFERENCE_FP32_TFLOPS
    p = Profile(source="static", bottleneck="memory-bound", structures=ops.structures, op_kinds=ops.names,
                flops=flops, bytes=nbytes, kernel_count=max(1, ops.compute_ops), bandwidth_gbs=bw,
                peak_tflops=peak, floor_ms=max(nbytes / (bw * 1e6), flops / (peak * 1e9)),
                ncu_status=f"not run: {why}")
    p.notes.append(f"static profile: floor on the {C.REFERENCE_GPU}'s measured ceilings, kernel count = "
                   "operators launched eagerly")
    if work is None:
        p.notes.append("FLOPs and bytes unknown: the forward needs real data (cannot run on the meta device)")
    return finish(p)


def counters_note(p: Profile) -> str | None:
    """One line saying that the hot kernels have no Nsight Compute counters and why (None: every
    hot kernel ncu can measure has them; copies and memsets never do)."""
    status = p.ncu_status or "not run"
    if p.source == "static":
        return f"static profile: no Nsight Compute counters and no measured kernels ({status})"
    if not status.startswith("ok"):
        return f"no Nsight Compute counters ({status}): limiters from kernel times and geometry only"
    missing = [k for k in hot_kernels(p.kernels) if k.kind == "kernel" and not has_counters(k)]
    if missing:
        return (f"ncu ran ({status}) but {len(missing)} hot kernel(s) got no counters: "
                + ", ".join(base_name(k.name)[:60] for k in missing))
    return None


# ---- the node -------------------------------------------------------------------------------
def profiler(state: GraphState) -> dict[str, Any]:
    verdict = state.best_verdict or state.verdict
    assert verdict is not None, "profiler runs after a correct evaluation"
    s, cand = state.settings, state.best or state.candidate
    subject = cand.hash if cand is not None else None
    prev = state.profile
    if prev is not None and ((prev.source == "static" and s.device != "cuda") or
                             (prev.source == "gpu" and prev.subject == subject)):
        return {"profile": prev}  # nothing changed since the last profile
    ops = op_summary(state.problem.source, state.problem.path)
    failed = None
    why = skip_reason(s.device, cand is not None, s.wall_clock_s - state.elapsed_s, s.profile_budget_s)
    if why is None and cand is not None:
        r = profile(state.problem.source, cand.source,
                    ProfileOptions(size=s.size, precision=s.precision, budget_s=s.profile_budget_s,
                                   work=known_work(state)),
                    problem_name=state.problem.path, candidate_name=f"candidate_{cand.hash}.py",
                    tuning=state.tuning)
        if r.ok:
            return {"profile": profile_from_result(r, ops, subject)}
        why = "the profiling child failed"
        failed = f"profiling child failed ({r.reason}); from the reviewer's breakdown instead"
    if s.device == "cuda" and verdict.kernel_breakdown:
        p = profile_from_verdict(verdict, ops, subject, why or "")
    else:
        p = static_profile(ops, static_work(state.problem.source, state.problem.path), why or "")
    if failed:
        p.notes.append(failed)
    return {"profile": p}


def skip_reason(device: str, has_candidate: bool, clock_left_s: float, budget_s: float) -> str | None:
    """Why the profiling child (and with it Nsight Compute) does not run; None when it does."""
    if device != "cuda":
        return "no GPU"
    if not has_candidate:
        return "no candidate"
    if shutil.which("ncu") is None:
        return "ncu not found on PATH"
    if budget_s <= 0:
        return "profiling disabled (profile_budget_s = 0)"
    if clock_left_s < MIN_CLOCK_LEFT_S:
        return f"{clock_left_s:.0f} s left on the run's clock, a profile needs ~{MIN_CLOCK_LEFT_S:g}"
    return None

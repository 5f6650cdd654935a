"""Profiles rebuilt from the H200 fixtures (tests/fixtures/profiles/), the way the child builds them.

Each fixture is a torch.profiler timeline of one forward (`<name>.torch.json`) and Nsight Compute's
`--csv --page details` output for one more forward (`<name>.ncu.csv`), captured by
tests/gpu/capture_profile_fixture.py. The fixture carries no CUDA-event runtime, so the timeline's span (first
launch start to last launch end) stands in for it; FLOPs and minimum bytes come from the problem
at full size on the meta device, the ceilings are the H200's measured ones.
"""

from __future__ import annotations

import json
from pathlib import Path

from kernelskill.nodes.classify import REFERENCE_BANDWIDTH_GBS, REFERENCE_FP32_TFLOPS
from kernelskill.nodes.profiler import op_summary, profile_from_result, static_work
from kernelskill.profiling import ncu as N
from kernelskill.profiling.profile import ProfileResult
from kernelskill.profiling.timeline import Launch, attach_ncu, timeline_of
from kernelskill.state.records import Profile

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "profiles"
PROBLEMS = {"softmax_eager": "problems/level1/22_softmax_last_dim.py",
            "softmax_hand": "problems/level1/22_softmax_last_dim.py",
            "matmul_eager": "problems/level1/01_matmul_square.py",
            "mlp_eager": "problems/level3/01_mlp.py",
            "conv_bn_relu_eager": "problems/level2/02_conv2d_batchnorm_relu.py"}


def launches(name: str) -> list[Launch]:
    data = json.loads((FIXTURES / f"{name}.torch.json").read_text())
    return [Launch(k["name"], k["start_us"], k["dur_us"],
                   "memset" if k["name"].startswith("Memset") else "kernel") for k in data["kernels"]]


def ncu_text(name: str) -> str:
    return (FIXTURES / f"{name}.ncu.csv").read_text()


def result(name: str, with_ncu: bool = True) -> ProfileResult:
    """The ProfileResult the child would have returned for this fixture."""
    ls = launches(name)
    tl = timeline_of(ls)
    status = "not run"
    if with_ncu:
        rows = N.parse_csv(ncu_text(name))
        status = f"ok: launches profiled {len(rows)}, kernels {attach_ncu(tl, ls, rows, None)}"
    problem = ROOT / PROBLEMS[name]
    flops, nbytes, _ = static_work(problem.read_text(), str(problem))
    bw, peak = REFERENCE_BANDWIDTH_GBS, REFERENCE_FP32_TFLOPS
    return ProfileResult(ok=True, stage="done", device="cuda", gpu_name="NVIDIA H200",
                         runtime_ms=tl.span_us / 1e3, flops=flops, bytes=nbytes,
                         floor_ms=max(nbytes / (bw * 1e6), flops / (peak * 1e9)), bandwidth_gbs=bw,
                         fp32_tflops=peak, sm_count=132, timeline=tl, ncu_status=status)


def fixture_profile(name: str, with_ncu: bool = True) -> Profile:
    problem = ROOT / PROBLEMS[name]
    return profile_from_result(result(name, with_ncu), op_summary(problem.read_text(), str(problem)))

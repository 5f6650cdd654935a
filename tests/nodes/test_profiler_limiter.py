"""Each hot kernel's limiter and achieved-vs-peak line, and what a profile says when it has no
counters, on CPU: H200 fixtures (tests/fixtures/profiles/, rebuilt by profile_fixtures.py) and
single records built field by field."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from kernelskill.nodes import limiter as L
from kernelskill.nodes import profiler as P
from kernelskill.profiling.ncu import base_name
from kernelskill.state.graph_state import GraphState, RunSettings, Verdict
from kernelskill.state.records import Candidate, KernelStat, Problem, Profile

sys.path.insert(0, str(Path(__file__).resolve().parent))
from profile_fixtures import ROOT, fixture_profile, result  # noqa: E402

ROOF = ("compute-bound", "640 FLOP/byte >= ridge point 12.2")


def k(**kw: object) -> KernelStat:
    base: dict[str, object] = {"name": "kern", "time_us": 100.0, "share": 1.0, "launches": 1}
    return KernelStat(**{**base, **kw})


# ---- the pure functions ------------------------------------------------------------------------
def test_hot_kernels_are_the_top_three_with_a_tenth_of_the_time_and_always_the_first() -> None:
    ks = [k(name=n, share=s) for n, s in (("d", 0.05), ("a", 0.5), ("c", 0.15), ("b", 0.2), ("e", 0.1))]
    assert [x.name for x in L.hot_kernels(ks)] == ["a", "b", "c"]
    assert [x.name for x in L.hot_kernels([k(name="x", share=0.04), k(name="y", share=0.03)])] == ["x"]
    assert L.hot_kernels([]) == []


def test_limiter_of_single_kernels() -> None:
    # Too short to amortise a launch: launch-bound whatever the counters say.
    lim, why = L.limiter_of(k(time_us=12.0, launches=4, dram_pct=80.0, sm_pct=10.0), ROOF)
    assert lim == "launch-bound" and why.startswith("3.0 us per launch x 4")
    # Counters decide (classify_kernel's thresholds), and the line says what was achieved.
    lim, why = L.limiter_of(k(dram_pct=75.0, l2_pct=80.0, sm_pct=20.0, bandwidth_pct=88.0), ROOF)
    assert lim == "memory-bound" and why.endswith("achieved DRAM 88% of the measured bandwidth")
    lim, why = L.limiter_of(k(dram_pct=5.0, sm_pct=82.0, bandwidth_pct=6.0, flops_pct=71.0), ROOF)
    assert lim == "compute-bound" and "fp32 71% of the measured FLOP rate" in why
    low = {"dram_pct": 30.0, "sm_pct": 40.0, "waves": 3.0}
    assert L.limiter_of(k(**low, theoretical_occupancy_pct=12.5, occupancy_limiter="registers",
                          registers=234), ROOF)[0] == "occupancy-limited"
    assert L.limiter_of(k(**{**low, "waves": 0.5}, grid=64), ROOF)[0] == "latency-bound"
    # Without ncu: launch geometry, then the structure, then the forward's roofline, each said so.
    assert L.limiter_of(k(blocks_per_sm=0.1, grid=16), ROOF)[0] == "latency-bound"
    lim, why = L.limiter_of(k(structure="normalization"), ROOF)
    assert lim == "memory-bound" and why.startswith("no counters")
    lim, why = L.limiter_of(k(structure="gemm"), ROOF)
    assert lim == "compute-bound" and why == f"no counters: the forward's roofline class ({ROOF[1]})"
    assert L.achieved(k()) == "no counters" and L.achieved(k(dram_pct=50.0, sm_pct=20.0)) == \
        "achieved DRAM 50%, SM 20% of peak"


def resnet_block(conv_sm_pct: float, conv_tensor_pct: float) -> Profile:
    """A ResNet basic block's hot kernels as measured on an H100 (2026-12-06,
    problems/measurements/h100-2026-12-06-level3/): a vendor convolution on the tensor pipe, batch
    norm statistics, a layout transpose."""
    return Profile(source="gpu", bottleneck="compute-bound", flops=1e10, bytes=2e8, kernels=[
        k(name="sm90_xmma_fprop_implicit_gemm_tf32", share=0.30, time_us=217.0, launches=2, structure="conv",
          dram_pct=32.0, sm_pct=conv_sm_pct, tensor_pct=conv_tensor_pct),
        k(name="_nrm_stats_kernel", share=0.19, time_us=136.0, launches=3, structure="normalization",
          dram_pct=58.0, sm_pct=41.0, tensor_pct=0.1, waves=3.0, theoretical_occupancy_pct=12.0,
          occupancy_limiter="registers", registers=200),
        k(name="_cv_transpose_kernel", share=0.14, time_us=102.0, structure="elementwise", dram_pct=86.0,
          sm_pct=12.0)])


def test_a_hottest_kernel_near_its_peak_gives_way_to_the_one_with_the_most_time_to_give_back() -> None:
    assert L.used(k(dram_pct=32.0, sm_pct=77.0, tensor_pct=89.0)) == (0.89, "tensor-pipe")
    assert L.used(k()) == (0.0, "") and L.spare_share(k(share=0.5)) == 0.5
    p = resnet_block(conv_sm_pct=77.0, conv_tensor_pct=89.0)
    L.set_limiters(p)
    stats = p.kernels[1]
    assert L.target_kernel(L.hot_kernels(p.kernels)) is stats
    assert p.limiter == stats.limiter == "occupancy-limited"
    assert p.limiter_rationale.startswith("_nrm_stats_kernel (19% of GPU time): ")
    assert "the hottest, sm90_xmma_fprop_implicit_gemm_tf32 (30% of GPU time), already runs at 89% of its " \
           "tensor-pipe peak (3% of the time to give back, against 8% here)" in p.limiter_rationale


def test_a_hottest_kernel_below_near_peak_stays_the_target() -> None:
    # At 70% of its busiest unit's peak the convolution could give back 9% against the statistics'
    # 8%, at 60% 12%: the hottest stays either way. At 79% (6%) too: below NEAR_PEAK.
    for pct in (70.0, 60.0, 79.0):
        p = resnet_block(conv_sm_pct=pct, conv_tensor_pct=pct)
        L.set_limiters(p)
        assert p.limiter == p.kernels[0].limiter == "compute-bound", p.limiter_rationale
        assert "already runs" not in p.limiter_rationale


# ---- on the H200 fixtures ------------------------------------------------------------------------
def test_profiles_carry_the_hottest_kernels_limiter_at_top_level() -> None:
    want = {"softmax_eager": "memory-bound", "softmax_hand": "memory-bound", "matmul_eager": "compute-bound",
            "mlp_eager": "compute-bound", "conv_bn_relu_eager": "occupancy-limited"}
    for name, lim in want.items():
        p = fixture_profile(name)
        top = L.hot_kernels(p.kernels)[0]
        assert p.limiter == top.limiter == lim, (name, p.limiter_rationale)
        assert p.limiter_rationale.startswith(f"{base_name(top.name)[:60]} ({top.share:.0%} of GPU time): ")
        assert "achieved DRAM" in top.limiter_rationale and "\n" not in top.limiter_rationale
        assert not [n for n in p.notes if "counters" in n], name  # ncu measured every hot kernel
    conv = fixture_profile("conv_bn_relu_eager")
    # conv 43% occupancy-limited, batch norm 36% latency-bound (0.48 waves), ReLU 13% memory-bound;
    # the 2.6 us layout transform and the 1.4 us add hold < 10%: no limiter.
    assert [(x.structure, x.limiter) for x in conv.kernels if x.limiter] == [
        ("conv", "occupancy-limited"), ("normalization", "latency-bound"), ("elementwise", "memory-bound")]
    relu = next(x for x in conv.kernels if x.limiter == "memory-bound")
    assert relu.bandwidth_pct == pytest.approx(97, abs=1)  # DRAM bytes / duration vs 4175 GB/s


# ---- profiles without counters say so in one line ----------------------------------------------------
def counter_notes(p: Profile) -> list[str]:
    return [n for n in p.notes if "counters" in n]


def test_static_profile_says_it_has_no_counters() -> None:
    path = ROOT / "problems" / "level1" / "22_softmax_last_dim.py"
    src = path.read_text()
    p = P.static_profile(P.op_summary(src, str(path)), P.static_work(src, str(path)))
    assert p.source == "static" and p.ncu_status == "not run: no GPU" and p.limiter is None
    assert counter_notes(p) == ["static profile: no Nsight Compute counters and no measured kernels "
                                "(not run: no GPU)"]


def test_failed_ncu_and_hot_kernels_without_counters_are_named() -> None:
    r = result("conv_bn_relu_eager", with_ncu=False)
    r.ncu_status = "failed: no permission to read GPU performance counters (ERR_NVGPUCTRPERM)"
    p = P.profile_from_result(r, P.op_summary("", ""))
    assert counter_notes(p) == [f"no Nsight Compute counters ({r.ncu_status}): limiters from kernel times "
                                "and geometry only"]
    assert p.limiter is not None and "no counters" in p.limiter_rationale
    # ncu ran, but the batch norm kernel (36%) came back without counters:
    r = result("conv_bn_relu_eager")
    bn = next(kt for kt in r.timeline.kernels if "bn_fw" in kt.name)
    bn.ncu = None
    r.graph_replay = True
    p = P.profile_from_result(r, P.op_summary("", ""))
    [note] = counter_notes(p)
    assert note.startswith("ncu ran (ok: ")
    assert note.endswith("but 1 hot kernel(s) got no counters: bn_fw_tr_1C11_kernel_NCHW")
    assert any(n.startswith("the forward replays a CUDA graph") for n in p.notes)


def state(verdict: Verdict, **settings: object) -> GraphState:
    path = ROOT / "problems" / "level1" / "22_softmax_last_dim.py"
    cand = Candidate(source="class ModelNew: pass\n")
    return GraphState(problem=Problem(name="softmax", path=str(path), source=path.read_text()),
                      settings=RunSettings(device="cuda", **settings), best=cand, candidate=cand,
                      best_verdict=verdict)


def test_node_on_a_gpu_host_without_ncu_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(P.shutil, "which", lambda _: None)
    v = Verdict(correct=True, stage="done", runtime_ms=1.70, floor_ms=1.005, flops=0.0, bytes=4.194e9,
                kernel_breakdown=[{"name": "softmax_kernel", "time_us": 1495.5, "launches": 1}])
    p = P.profiler(state(v))["profile"]
    assert p.ncu_status == "not run: ncu not found on PATH"
    assert counter_notes(p) == ["no Nsight Compute counters (not run: ncu not found on PATH): limiters from "
                                "kernel times and geometry only"]
    assert p.limiter == "memory-bound" and p.kernels[0].limiter_rationale.startswith("no counters")


def test_why_the_profiling_child_does_not_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(P.shutil, "which", lambda _: "/usr/bin/ncu")
    assert P.skip_reason("cpu", True, 1e4, 25.0) == "no GPU"
    assert P.skip_reason("cuda", True, 1e4, 0.0).startswith("profiling disabled")
    assert P.skip_reason("cuda", True, 50.0, 25.0) == "50 s left on the run's clock, a profile needs ~100"
    assert P.skip_reason("cuda", True, 1e4, 25.0) is None
    monkeypatch.setattr(P.shutil, "which", lambda _: None)
    assert P.skip_reason("cuda", True, 1e4, 25.0) == "ncu not found on PATH"


def test_a_replay_whose_timeline_shows_no_kernels_says_so() -> None:
    from kernelskill.profiling.timeline import Launch, timeline_of

    r = result("softmax_hand", with_ncu=False)
    r.graph_replay, r.ncu_status = True, "ok: launches profiled 1, kernels 0"
    r.timeline = timeline_of([Launch("Memcpy DtoD (Device -> Device)", 0.0, 40.0, kind="memcpy")])
    p = P.profile_from_result(r, P.op_summary("", ""))
    assert any(n.startswith("the replay's timeline shows no kernels") for n in p.notes)
    assert p.limiter == "memory-bound"
    assert p.limiter_rationale == ("Memcpy DtoD (Device -> Device) (100% of GPU time): a memcpy: moves data "
                                   "only; no counters")

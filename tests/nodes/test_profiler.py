"""The profiler's verdicts, signature, static profile, node and CLI, on CPU from H200 fixtures.

Verdicts on the captured fixtures (tests/fixtures/profiles/, rebuilt by profile_fixtures.py):
softmax eager and the hand-written softmax are memory-bound, the 3840^3 SGEMM and the MLP are
compute-bound, conv + batch norm + ReLU is occupancy-limited (its cuDNN TF32 conv: 12.5% occupancy,
no unit at 60%) with a latency-bound batch norm (0.48 waves) close behind.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from kernelskill.nodes import classify as C
from kernelskill.nodes import profiler as P
from kernelskill.profiling.profile import ProfileOptions, ProfileResult
from kernelskill.skill_index.facts import facts_from_text
from kernelskill.state.graph_state import GraphState, RunSettings, Verdict
from kernelskill.state.records import Candidate, KernelStat, Problem, Profile

sys.path.insert(0, str(Path(__file__).resolve().parent))
from profile_fixtures import ROOT, fixture_profile, result  # noqa: E402

SIGNATURE = re.compile(r"bottleneck: [a-z-]+; \d+(\.\d)?x over speed of light(; DRAM \d+% of peak, SM \d+%)?"
                       r"(; occupancy \d+%)?\nstructure: [a-z, -]+; ops: [a-z0-9_, ]+\n"
                       r"kernels: \d+ launch(es)? per forward; top kernel \d+% of time \([^)]+\)"
                       r"(; host gaps \d+ us)?")


@pytest.fixture(scope="module")
def fixtures() -> dict[str, Profile]:
    return {name: fixture_profile(name) for name in
            ("softmax_eager", "softmax_hand", "matmul_eager", "mlp_eager", "conv_bn_relu_eager")}


# ---- verdicts on the H200 fixtures -------------------------------------------------------------
def test_softmax_eager_is_memory_bound(fixtures: dict[str, Profile]) -> None:
    p = fixtures["softmax_eager"]
    assert p.bottleneck == "memory-bound" and p.structures == ["row-reduction"] and p.op_kinds == ["softmax"]
    assert p.headroom == pytest.approx(1.64, abs=0.01)  # 1.647 ms vs 4.19 GB / 4175 GB/s = 1.005 ms
    assert (round(p.dram_pct), round(p.sm_pct), round(p.occupancy_pct)) == (70, 42, 90)
    assert p.signature.splitlines()[0] == ("bottleneck: memory-bound; 1.6x over speed of light; "
                                           "DRAM 70% of peak, SM 42%; occupancy 90%")


def test_hand_softmax_is_at_its_roofline_but_moves_extra_bytes(fixtures: dict[str, Profile]) -> None:
    p = fixtures["softmax_hand"]
    [k] = p.kernels
    assert p.bottleneck == "memory-bound" and k.dram_pct == 87.25
    assert k.headroom == pytest.approx(1.0, abs=0.02)  # its own 6.27 GB at the copy ceiling...
    assert k.dram_bytes / p.bytes == pytest.approx(1.5, abs=0.02)  # ...but 1.5x the minimum bytes
    assert p.headroom == pytest.approx(1.49, abs=0.01)


def test_sgemm_is_compute_bound(fixtures: dict[str, Profile]) -> None:
    p = fixtures["matmul_eager"]
    assert p.bottleneck == "compute-bound" and p.structures == ["gemm"] and p.op_kinds == ["matmul"]
    gemm = p.kernels[0]
    assert (gemm.structure, gemm.sm_pct, gemm.occupancy_limiter) == ("gemm", 79.75, "registers+shared-memory")
    # 2.45 ms (memset, gap, 2.42 ms SGEMM) vs 113 GFLOP / 50.9 TFLOP/s = 2.22 ms.
    assert p.headroom == pytest.approx(1.10, abs=0.01)
    assert p.kernels[1].kind == "memset" and p.kernels[1].bottleneck == "latency-bound"


def test_mlp_is_compute_bound_in_its_gemms(fixtures: dict[str, Profile]) -> None:
    # 4 cuBLAS FFMA GEMMs hold 99.3% of the time at SM 78% (L1 92%: shared-memory operand traffic,
    # an SM-side unit); the ReLUs are L2-bound at 67%. Not launch-bound: the GPU idles 0.3%.
    p = fixtures["mlp_eager"]
    assert p.bottleneck == "compute-bound" and p.bottleneck_shares["compute-bound"] > 0.99
    assert p.structures == ["gemm", "elementwise", "multi-kernel-graph"] and p.op_kinds == ["linear", "relu"]
    assert p.kernel_count == 7 and C.idle_fraction(p) < 0.01
    relu = p.kernels[1]
    assert relu.bottleneck == "memory-bound" and relu.launches == 3


def test_conv_bn_relu_is_occupancy_limited_then_latency_bound(fixtures: dict[str, Profile]) -> None:
    p = fixtures["conv_bn_relu_eager"]
    conv, bn, relu = p.kernels[:3]
    # cuDNN TF32 implicit GEMM: 234 registers -> 12.5% theoretical occupancy, SM 59% / L1 57%.
    assert (conv.structure, conv.bottleneck) == ("conv", "occupancy-limited")
    assert conv.occupancy_limiter == "registers" and conv.theoretical_occupancy_pct == 12.5
    # Batch norm statistics + apply: 128 blocks (one per channel) on 132 SMs, 0.48 waves.
    assert (bn.structure, bn.bottleneck) == ("normalization", "latency-bound") and bn.waves == 0.48
    assert (relu.structure, relu.bottleneck) == ("elementwise", "memory-bound") and relu.dram_pct == 84.16
    assert p.bottleneck == "occupancy-limited"
    assert p.bottleneck_shares == pytest.approx({"occupancy-limited": 0.427, "latency-bound": 0.361,
                                                 "memory-bound": 0.212}, abs=0.002)
    assert any("TF32" in n for n in p.notes) and p.headroom < 1  # TF32 beats the fp32 floor
    assert p.structures == ["conv", "normalization", "column-reduction", "elementwise"]


def test_every_fixture_signature_has_the_three_line_format(fixtures: dict[str, Profile]) -> None:
    for name, p in fixtures.items():
        assert SIGNATURE.fullmatch(p.signature), (name, p.signature)
        facts = facts_from_text(p.signature)  # what the skill index reads back
        assert facts.bottleneck == p.bottleneck and list(facts.structures) == p.structures, name
        assert facts.kernel_count == p.kernel_count and list(facts.ops) == p.op_kinds[:12], name
        assert facts.headroom == pytest.approx(p.headroom, abs=0.05 if p.headroom < 10 else 0.5), name


def test_without_ncu_the_roofline_decides(fixtures: dict[str, Profile]) -> None:
    verdicts = {name: fixture_profile(name, with_ncu=False) for name in fixtures}
    assert {n: p.bottleneck for n, p in verdicts.items()} == {
        "softmax_eager": "memory-bound", "softmax_hand": "memory-bound", "matmul_eager": "compute-bound",
        "mlp_eager": "compute-bound", "conv_bn_relu_eager": "compute-bound"}
    first = verdicts["softmax_eager"].signature.splitlines()[0]
    assert first == "bottleneck: memory-bound; 1.6x over speed of light"  # no ncu: no unit percentages


# ---- thresholds, one at a time -----------------------------------------------------------------
def k(**kw: object) -> KernelStat:
    base: dict[str, object] = {"name": "kern", "time_us": 100.0, "share": 1.0, "launches": 1}
    return KernelStat(**{**base, **kw})


def test_kernel_thresholds() -> None:
    assert C.classify_kernel(k(time_us=8.0, launches=2))[0] == "latency-bound"  # 4 us per launch
    assert C.classify_kernel(k(dram_pct=61, l2_pct=70, sm_pct=30))[0] == "memory-bound"
    assert C.classify_kernel(k(dram_pct=5, sm_pct=40, l1_pct=61))[0] == "compute-bound"  # L1 is SM side
    assert C.classify_kernel(k(dram_pct=5, sm_pct=30, tensor_pct=70))[0] == "compute-bound"
    low = {"dram_pct": 30.0, "sm_pct": 40.0, "waves": 3.0}
    assert C.classify_kernel(k(**{**low, "waves": 0.6}))[0] == "latency-bound"
    regs = {**low, "occupancy_limiter": "registers"}
    assert C.classify_kernel(k(**regs, theoretical_occupancy_pct=25))[0] == "occupancy-limited"
    assert C.classify_kernel(k(**regs, theoretical_occupancy_pct=50))[0] == "latency-bound"
    # A block-size limit is not register or shared-memory pressure:
    warps = {**low, "occupancy_limiter": "warps"}
    assert C.classify_kernel(k(**warps, theoretical_occupancy_pct=25))[0] == "latency-bound"
    assert C.classify_kernel(k(blocks_per_sm=0.12, grid=16))[0] == "latency-bound"  # Kineto geometry only
    assert C.classify_kernel(k()) == (None, "")


def test_launch_bound_and_latency_bound_forwards() -> None:
    def prof(**kw: object) -> Profile:
        base: dict[str, object] = {"source": "gpu", "bottleneck": "memory-bound", "bytes": 1e6, "flops": 0.0}
        return Profile(**{**base, **kw})

    many = prof(runtime_ms=0.5, busy_ms=0.2, kernel_count=20, kernels=[k(share=1.0, dram_pct=80)])
    assert C.diagnose(many).bottleneck == "launch-bound" and "idle 60%" in C.diagnose(many).rationale
    assert C.classify(prof(runtime_ms=0.5, busy_ms=0.3, kernel_count=2)) != "launch-bound"  # 40%, 2 launches
    assert C.classify(prof(runtime_ms=0.5, busy_ms=0.3, kernel_count=3)) == "launch-bound"
    assert C.classify(prof(runtime_ms=0.5, busy_ms=0.2, kernel_count=1)) == "launch-bound"  # 60% idle
    assert C.classify(prof(headroom=20.0)) == "latency-bound"  # 20x over a streaming floor
    assert C.classify(prof(headroom=3.0)) == "memory-bound"
    assert C.classify(prof(flops=2e7, headroom=3.0)) == "compute-bound"  # 20 FLOP/byte > ridge 12.2
    assert C.ridge_point(prof()) == pytest.approx(50.9e3 / 4175)


# ---- structures and op names -------------------------------------------------------------------
def test_torch_names_from_the_ir() -> None:
    import torch.nn as nn

    assert P.torch_name("conv_transpose", {"dims": 3}, "") == "conv_transpose3d"
    assert P.torch_name("max_pool", {"dims": 2}, "") == "max_pool2d"
    assert P.torch_name("torch", {}, "torch.tril(v_x)") == "tril"
    assert P.torch_name("torch", {}, "v_x.masked_fill_(v_m, 0.0)") == "masked_fill"
    assert P.torch_name("torch", {}, "(v_a > v_b)") == "gt"
    holder = nn.Module()
    holder.rnn = nn.LSTM(4, 4)
    holder.norms = nn.ModuleList([nn.BatchNorm2d(3)])
    assert P.torch_name("torch", {}, "self.rnn(v_x)", holder) == "lstm"
    assert P.torch_name("torch", {}, "self.norms[0](v_x)", holder) == "batch_norm"
    assert P.torch_name("view", {}, "v_x.view(-1)") is None


def test_static_profiles_of_suite_problems() -> None:
    want = {"43_conv2d_square": (["conv2d"], "conv"), "24_sum_dim1": (["sum"], "column-reduction"),
            "25_mean_last_dim": (["mean"], "row-reduction"),
            "51_conv_transpose3d": (["conv_transpose3d"], "conv-transpose"),
            "39_maxpool2d": (["max_pool2d"], "pooling"), "29_cumsum": (["cumsum"], "scan"),
            "19_batchnorm2d": (["batch_norm"], "column-reduction"), "17_rmsnorm": (None, "normalization")}
    for stem, (ops, structure) in want.items():
        path = next((ROOT / "problems" / "level1").glob(f"{stem}.py"))
        src = path.read_text()
        p = P.static_profile(P.op_summary(src, str(path)), P.static_work(src, str(path)))
        assert p.source == "static" and p.kernels == [] and p.bytes > 0, stem
        assert ops is None or p.op_kinds == ops, (stem, p.op_kinds)
        assert structure is None or structure in p.structures, (stem, p.structures)
        assert p.signature.startswith(f"bottleneck: {p.bottleneck} (static estimate)")
    softmax = ROOT / "problems" / "level1" / "22_softmax_last_dim.py"
    flops, nbytes, conv_flops = P.static_work(softmax.read_text(), str(softmax))
    # Full size, on the meta device; max, subtract, exp, sum and divide per element (eval/timing/op_flops.py).
    assert (flops, nbytes, conv_flops) == (5.0 * 16384 * 32000, 2 * 16384 * 32000 * 4, 0.0)


# ---- the node ------------------------------------------------------------------------------------
def state(device: str, verdict: Verdict, profile: Profile | None = None) -> GraphState:
    path = ROOT / "problems" / "level1" / "22_softmax_last_dim.py"
    cand = Candidate(source="class ModelNew: pass\n")
    return GraphState(problem=Problem(name="softmax", path=str(path), source=path.read_text()),
                      settings=RunSettings(device=device), best=cand, candidate=cand, best_verdict=verdict,
                      profile=profile)


def test_node_on_cpu_builds_a_static_profile_once() -> None:
    v = Verdict(correct=True, stage="done", runtime_ms=3.0)
    p = P.profiler(state("cpu", v))["profile"]
    assert p.source == "static" and p.bottleneck == "memory-bound" and p.op_kinds == ["softmax"]
    assert P.profiler(state("cpu", v, p))["profile"] is p  # nothing changed: not rebuilt


def test_node_on_cuda_without_ncu_uses_the_reviewers_breakdown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(P.shutil, "which", lambda _: None)
    v = Verdict(correct=True, stage="done", runtime_ms=1.70, floor_ms=1.005, flops=0.0, bytes=4.194e9,
                kernel_breakdown=[{"name": "softmax_kernel", "time_us": 1495.5, "launches": 1}])
    p = P.profiler(state("cuda", v))["profile"]
    assert p.source == "gpu" and p.bottleneck == "memory-bound" and p.kernels[0].structure == "row-reduction"
    assert p.launch_gap_us == pytest.approx(204.5) and p.ncu_status.startswith("not run")


def test_node_on_cuda_with_ncu_profiles_each_new_best_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str | None] = []
    picks = {"A" * 52 + "/k.autotune.json": "{}"}

    def fake_profile(problem: str, cand: str | None, opts: ProfileOptions, **kw: object) -> ProfileResult:
        calls.append(cand)
        assert opts.budget_s == P.NODE_BUDGET_S and opts.device == "cuda"
        assert kw["tuning"] == picks  # the run's autotuning picks: the child does not re-tune
        r = result("softmax_hand")
        r.wall_s, r.stage_s = 14.2, {"load": 1.0, "ncu": 8.5}
        return r

    monkeypatch.setattr(P.shutil, "which", lambda _: "/usr/bin/ncu")
    monkeypatch.setattr(P, "profile", fake_profile)
    v = Verdict(correct=True, stage="done", runtime_ms=1.5)
    s = state("cuda", v)
    s.tuning = picks
    p = P.profiler(s)["profile"]
    assert len(calls) == 1 and p.subject == s.best.hash and p.kernels[0].dram_pct == 87.25
    assert p.seconds == {"wall": 14.2, "load": 1.0, "ncu": 8.5}
    assert P.profiler(state("cuda", v, p))["profile"] is p and len(calls) == 1  # same best: reused

    monkeypatch.setattr(P, "profile", lambda *a, **kw: ProfileResult(reason="Boom: candidate crashed"))
    p = P.profiler(state("cuda", v.model_copy(update={"kernel_breakdown": [
        {"name": "softmax_kernel", "time_us": 1495.5, "launches": 1}]})))["profile"]
    assert p.source == "gpu" and any("Boom" in n for n in p.notes)  # fell back to the breakdown


# ---- the CLI -----------------------------------------------------------------------------------
def test_cli_profile_on_cpu_prints_json(capsys: pytest.CaptureFixture[str]) -> None:
    from kernelskill.cli.main import main

    problem = str(ROOT / "problems/level1/22_softmax_last_dim.py")
    assert main(["profile", problem, "--device", "cpu", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["bottleneck"] == "memory-bound" and out["kernels"] == [] and out["flops"] == 5 * 16384 * 32000
    assert out["size"] == "full"  # what --help says profile does without --size, on cpu too
    assert out["bytes"] == 2 * 16384 * 32000 * 4 and out["floor_ms"] == pytest.approx(out["bytes"] / 4175e6)
    assert out["signature"].splitlines()[1] == "structure: row-reduction; ops: softmax"
    assert main(["profile", "no/such/problem.py", "--device", "cpu"]) == 2


def test_profile_help_states_the_size_it_runs(capsys: pytest.CaptureFixture[str]) -> None:
    from kernelskill.cli.main import main

    with pytest.raises(SystemExit):
        main(["profile", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "(default: full; on cpu the profile is static" in text and "small on cpu" not in text


# ---- on the H200 ---------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("stem,want", [("22_softmax_last_dim", "memory-bound"),
                                       ("01_matmul_square", "compute-bound")])
def test_gpu_profile_of_the_reference(stem: str, want: str) -> None:
    from kernelskill.profiling.profile import profile

    path = ROOT / "problems" / "level1" / f"{stem}.py"
    r = profile(path.read_text(), None, ProfileOptions(), problem_name=str(path))
    assert r.ok, (r.reason, r.log_tail[-2000:])
    p = P.profile_from_result(r, P.op_summary(path.read_text(), str(path)))
    assert p.bottleneck == want, p.rationale
    assert r.elapsed_s < 25 and p.headroom > 0.9 and p.kernels
    if r.ncu_status.startswith("ok"):
        assert p.kernels[0].dram_pct is not None and p.dram_pct is not None

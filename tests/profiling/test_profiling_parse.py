"""Parsing what the GPU side of the profiler reads: Nsight Compute CSV, Kineto traces, timelines.

The fixtures are real H200 captures (tests/fixtures/profiles/, see tests/gpu/capture_profile_fixture.py);
where a format detail is not in them (ncu's raw --metrics rows, Kineto's launch geometry), the
test builds a few rows in the documented format and says so.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from kernelskill.profiling import ncu as N
from kernelskill.profiling.profile import ProfileOptions, ProfileResult, profile
from kernelskill.profiling.timeline import Launch, attach_ncu, launches_from_trace, ncu_selection, timeline_of

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "profiles"
NAMES = ["softmax_eager", "softmax_hand", "matmul_eager", "mlp_eager", "conv_bn_relu_eager"]


def csv_of(name: str) -> str:
    return (FIX / f"{name}.ncu.csv").read_text()


def launches_of(name: str) -> list[Launch]:
    data = json.loads((FIX / f"{name}.torch.json").read_text())
    return [Launch(k["name"], k["start_us"], k["dur_us"],
                   "memset" if k["name"].startswith("Memset") else "kernel") for k in data["kernels"]]


# ---- Nsight Compute --------------------------------------------------------------------------
def test_softmax_eager_sections_are_parsed_into_typed_fields() -> None:
    [k] = N.parse_csv(csv_of("softmax_eager"))  # ==PROF== lines and the script's stdout come first
    assert N.base_name(k.name) == "cunn_SoftMaxForward"
    assert (k.duration_us, k.dram_pct, k.l2_pct, k.l1_pct, k.sm_pct) == (1653.568, 70.36, 84.70, 21.61, 42.05)
    assert (k.block, k.grid, k.registers, k.waves) == (1024, 16384, 32, 62.06)
    assert (k.occupancy_pct, k.theoretical_occupancy_pct, k.occupancy_limiter) == (89.88, 100.0, None)
    assert k.spill_requests == 0 and k.cpi == 34.13
    # Stalls from the CPIStall rule text: 20.8 of 34.1 cycles per instruction wait on L1TEX (global) loads.
    assert k.stalls == {"long_scoreboard": 20.8}
    assert (k.top_pipe, k.top_pipe_pct) == ("FMA", 24.6)
    # DRAM bytes = DRAM byte/s x duration: 5.6 GB, 1.33x the 4.19 GB a softmax must move (two reads).
    assert k.dram_bytes == pytest.approx(3.3857e12 * 1653.568e-6, rel=1e-3)


def test_every_fixture_parses_and_names_match_the_torch_timeline() -> None:
    counts = {}
    for name in NAMES:
        rows = N.parse_csv(csv_of(name))
        kernels = [x for x in launches_of(name) if x.kind == "kernel"]
        counts[name] = len(rows)
        assert [N.base_name(r.name) for r in rows] == [N.base_name(x.name) for x in kernels], name
        assert all(r.duration_us and r.sm_pct is not None and r.registers for r in rows), name
    assert counts == {"softmax_eager": 1, "softmax_hand": 1, "matmul_eager": 1, "mlp_eager": 7,
                      "conv_bn_relu_eager": 6}


def test_occupancy_limiter_stalls_and_pipes_on_the_gemm_and_conv_fixtures() -> None:
    [gemm] = N.parse_csv(csv_of("matmul_eager"))
    assert gemm.occupancy_limiter == "registers+shared-memory" and gemm.theoretical_occupancy_pct == 12.5
    assert (gemm.registers, gemm.sm_pct, gemm.top_pipe, gemm.top_pipe_pct) == (202, 79.75, "FMA", 70.9)
    conv = N.parse_csv(csv_of("conv_bn_relu_eager"))
    assert conv[2].occupancy_limiter == "registers" and conv[2].registers == 234
    assert conv[2].stalls == {"wait": 1.5} and conv[2].top_pipe == "Shared"
    assert conv[4].waves == 0.48 and conv[4].grid == 128  # batch norm: one block per channel
    assert conv[4].occupancy_limiter == "registers" and conv[4].theoretical_occupancy_pct == 50


def test_stray_output_inside_the_csv_is_skipped() -> None:
    lines = csv_of("softmax_hand").splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith('"ID"')) + 3
    noisy = "\n".join(lines[:at] + ["candidate says hi", '"9","x"', ""] + lines[at:])
    [k] = N.parse_csv(noisy)
    assert k.dram_pct == 87.25 and k.duration_us == pytest.approx(1493.504)
    assert N.parse_csv("==PROF== nothing profiled\n") == []


def test_raw_metric_rows_give_bytes_flops_tensor_and_all_stalls() -> None:
    # Synthetic rows in the layout ncu prints for --metrics ("Command line profiler metrics").
    head = next(ln for ln in csv_of("matmul_eager").splitlines() if ln.startswith('"ID"'))
    ident = '"0","1","python3","host","void Kernel2<x>(Params)","1","7","(256, 1, 1)","(240, 2, 4)","0","9.0"'
    rows = {"dram__bytes_read.sum": ("byte", "400,000,000"), "dram__bytes_write.sum": ("byte", "200,000,000"),
            "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": ("inst", "56,623,104,000"),
            "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum": ("inst", "10"),
            "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum": ("inst", "5"),
            "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active": ("%", "0"),
            "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio": ("", "0.4"),
            "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio": ("", "0.9"),
            "Duration": ("ns", "2,418,944")}
    text = "\n".join([head] + [f'{ident},"Command line profiler metrics","{m}","{u}","{v}",'
                               for m, (u, v) in rows.items()])
    [k] = N.parse_csv(text)
    assert k.dram_bytes == 600e6 and k.flops == 2 * 56_623_104_000 + 15 and k.tensor_pct == 0
    assert list(k.stalls) == ["math_pipe_throttle", "long_scoreboard"]  # worst first, from the metrics


def test_command_line_and_failure_messages() -> None:
    cmd = N.command("ncu", ["python", "-m", "x"], kernel_regex="(^|:)(Kernel2)$", launch_count=3)
    assert cmd[:5] == ["ncu", "--clock-control", "none", "--profile-from-start", "off"]
    assert cmd[-3:] == ["python", "-m", "x"] and "regex:(^|:)(Kernel2)$" in cmd
    assert {cmd[i + 1] for i, a in enumerate(cmd) if a == "--section"} == set(N.SECTIONS)
    assert "--metrics" not in N.command("ncu", [], kernel_regex=None, launch_count=1, metrics=False)
    perm = "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access GPU Performance Counters"
    assert "permission" in (N.failure(perm) or "") and N.failure("==PROF== ok") is None
    assert N.unknown_metric("==ERROR== Failed to find metric sm__pipe_tensor_op_hmma_cycles_active")


def test_base_names_of_demangled_kernels() -> None:
    assert N.base_name("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>(float*)") == \
        "cunn_SoftMaxForward"
    assert N.base_name("void unnamed>::cunn_SoftMaxForward<4, float, float>(T4 *)") == "cunn_SoftMaxForward"
    assert N.base_name("void cutlass::Kernel2<cutlass_80_simt_sgemm>(Params)") == "Kernel2"
    assert N.base_name("softmax_kernel") == "softmax_kernel"


# ---- timelines ------------------------------------------------------------------------------
def test_timeline_of_the_mlp_fixture() -> None:
    tl = timeline_of(launches_of("mlp_eager"))
    assert tl.launches == 7 and len(tl.kernels) == 2  # 4 GEMMs and 3 ReLUs, two kernel names
    gemm, relu = tl.kernels
    assert gemm.launches == 4 and gemm.time_us == pytest.approx(2290.05, abs=0.01)
    assert gemm.share == pytest.approx(0.993, abs=1e-3) and relu.launches == 3
    assert tl.busy_us == pytest.approx(2305.96, abs=0.01) and tl.span_us == pytest.approx(2312.8, abs=0.1)
    assert tl.gap_us == pytest.approx((tl.span_us - tl.busy_us) / 6)


def test_timeline_of_conv_bn_relu_has_host_gaps() -> None:
    tl = timeline_of(launches_of("conv_bn_relu_eager"))
    assert tl.launches == 6 and tl.kernels[0].name.startswith("sm80_xmma_fprop")
    assert tl.gap_us == pytest.approx(48.4, abs=0.5)  # batch norm's host work (profiler on) shows up


def test_kineto_trace_events_with_launch_geometry() -> None:
    # Kineto's chrome-trace keys (libkineto output_json): grid/block as [x, y, z], etc.
    trace = {"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": "k2", "ts": 20.0, "dur": 5.0,
         "args": {"grid": [128, 1, 1], "block": [512, 1, 1], "registers per thread": 48,
                  "blocks per SM": 0.97, "est. achieved occupancy %": 50}},
        {"ph": "X", "cat": "kernel", "name": "k1", "ts": 10.0, "dur": 4.0, "args": {}},
        {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "ts": 1.0, "dur": 1.0},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 0.0, "dur": 30.0},
        {"ph": "f", "cat": "ac2g", "name": "flow", "ts": 0.0}]}
    got = launches_from_trace(trace)
    assert [x.name for x in got] == ["Memset (Device)", "k1", "k2"] and got[0].kind == "memset"
    assert (got[2].grid, got[2].block, got[2].registers, got[2].blocks_per_sm) == (128, 512, 48, 0.97)
    assert got[1].grid is None


def test_ncu_selection_and_attaching_rows_to_kernels() -> None:
    ls = launches_of("mlp_eager")
    tl = timeline_of(ls)
    assert ncu_selection(ls, tl, 8) == (None, 7)  # few launches: profile them all
    regex, count = ncu_selection(ls, tl, 4)
    assert count == 4 and "sm80_xmma_gemm" in regex and "vectorized" not in regex  # GEMMs hold 99%
    rows = N.parse_csv(csv_of("mlp_eager"))
    assert attach_ncu(tl, ls, rows, None) == 2
    gemm, relu = tl.kernels
    # Each kernel takes the ncu row of its longest launch in the timeline: GEMM 2 (990 us), ReLU 1 (6.4 us).
    assert (gemm.ncu.id, relu.ncu.id) == (2, 1) and gemm.ncu.duration_us == pytest.approx(1000.576)


def test_profile_result_round_trips_through_json() -> None:
    ls = launches_of("conv_bn_relu_eager")
    tl = timeline_of(ls)
    attach_ncu(tl, ls, N.parse_csv(csv_of("conv_bn_relu_eager")), None)
    r = ProfileResult(ok=True, stage="done", runtime_ms=1.0, timeline=tl, ncu_status="ok")
    back = ProfileResult.from_dict(json.loads(json.dumps(r.to_dict())))
    assert back == r and back.timeline.kernels[0].ncu.occupancy_limiter == "registers"


# ---- the parent side, without a GPU ----------------------------------------------------------
def test_unusable_problem_and_rejected_candidate_never_start_a_child() -> None:
    r = profile("x = 1\n", None, ProfileOptions(device="cpu"))
    assert r.usage_error and not r.ok and "not a KernelBench problem" in (r.reason or "")
    problem = (FIX.parent / "relu_scale.py").read_text()
    patched = "import time\ntime.perf_counter = lambda: 0.0\nclass ModelNew:\n    pass\n"
    r = profile(problem, patched, ProfileOptions(device="cpu"))
    assert r.stage == "static" and "evaluator would reject" in (r.reason or "")


def test_cpu_child_measures_time_flops_and_bytes() -> None:
    problem = (FIX.parent / "relu_scale.py").read_text()
    r = profile(problem, None, ProfileOptions(device="cpu", size="small", budget_s=60))
    assert r.ok, (r.reason, r.log_tail)
    assert r.stage == "done" and r.subject == "reference" and r.timeline is None
    assert r.runtime_ms > 0 and r.bytes == 4 * (33 * 70 * 2 + 70)
    assert r.flops == 3 * 33 * 70  # add, relu, multiply per element (eval/timing/op_flops.py)
    assert r.ncu_status == "not run: no GPU" and r.floor_ms is None




def test_the_profiling_child_starts_with_the_runs_tuning_picks_rebuilt() -> None:
    """The child itself, past the parent's static checks (which refuse `os`): as a candidate that
    got past them would look, it finds exactly the rebuilt records in its own cache."""
    sys.path.insert(0, str(FIX.parent))
    from candidates import tuning_reader
    from kernelskill.eval.child import run_child
    from kernelskill.eval.judge import tuning as T
    from kernelskill.profiling.profile import limit_s, request

    key, name = "A" * 52, "k.autotune.json"
    good = json.dumps({"key": [64, "torch.float32"], "configs_timings": [[
        {"kwargs": {"BLOCK": 64}, "num_warps": 4, "num_ctas": 1, "num_stages": 2, "maxnreg": None,
         "pre_hook": "os.system('x')", "ir_override": None}, [0.5]]]})
    want = {f"{key}/{name}": T.rebuild(good)}
    assert "os.system" not in want[f"{key}/{name}"]
    problem = (FIX.parent / "relu_scale.py").read_text()
    source = tuning_reader(want, mismatch="raise")
    opts = ProfileOptions(device="cpu", size="small", budget_s=60)

    def child(tuning: dict[str, str] | None) -> ProfileResult:
        run = run_child("kernelskill.profiling.profile", request(problem, source, opts), "cpu",
                        limit_s(opts), tuning=tuning)
        assert run.payload is not None, run.log_tail[-600:]
        return ProfileResult.from_dict(run.payload)

    r = child({f"{key}/{name}": good, f"../{name}": good})  # the second lands nowhere
    assert r.ok, r.reason
    assert set(r.stage_s) >= {"load", "timeline", "timing", "work"}
    r = child(None)  # no picks: an empty cache, and the candidate's check fails
    assert not r.ok and "cache holds []" in (r.reason or "")

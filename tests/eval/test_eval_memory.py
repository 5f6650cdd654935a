"""Evaluator memory on the CPU: every evaluation reports the judge's peak memory per stage, the
meter's sections see what was allocated in them, and a float64 reference that runs out of GPU
memory is computed on the host instead (the control flow, driven by a simulated OOM)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from kernelskill.eval import harness as H
from kernelskill.eval.api import _run_worker
from kernelskill.eval.judge.memory import MemoryMeter, largest_live
from kernelskill.eval.judge.worker import Worker
from kernelskill.eval.types import EvalOptions, EvalResult

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
from candidates import good, wrong_scale  # noqa: E402

PROBLEM = (ROOT / "tests" / "fixtures" / "relu_scale.py").read_text()
OPTS = EvalOptions(device="cpu", size="small", trials=2, timeout_s=120, baselines=False)
RAM_KIB = int(Path("/proc/meminfo").read_text().split()[1])  # MemTotal


def evaluate(candidate: str) -> EvalResult:
    return _run_worker(PROBLEM, candidate, OPTS, "problem.py", "cand.py", EvalResult(device="cpu"))


def plausible(mib: float) -> bool:
    # A Python process with torch imported is at least ~50 MiB resident, and no more than the RAM.
    return 50 < mib < RAM_KIB / 1024


def test_a_result_reports_peak_memory_per_stage() -> None:
    r = evaluate(good())
    assert r.correct, r.reason
    peaks = r.peak_memory_mb
    assert set(peaks) == {"load", "compile", "correctness", "timing", "reference", "compare"}, peaks
    assert all(plausible(v) for v in peaks.values()), peaks
    assert EvalResult.from_dict(r.to_dict()).peak_memory_mb == peaks  # carried into the JSON


def test_a_failed_evaluation_reports_the_stages_it_reached() -> None:
    r = evaluate(wrong_scale())
    assert not r.correct and r.stage == "correctness", (r.stage, r.reason)
    assert {"load", "compile", "reference", "compare"} <= set(r.peak_memory_mb), r.peak_memory_mb
    assert "timing" not in r.peak_memory_mb


def _clear_refs_works() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _clear_refs_works(), reason="the kernel does not let this process reset "
                    "its resident high-water mark (/proc/self/clear_refs)")
def test_sections_see_what_was_allocated_in_them() -> None:
    peaks: dict[str, float] = {}
    meter = MemoryMeter("cpu", peaks)
    meter.enter_stage("timing")
    with meter.section("big"):
        big = torch.ones(100 << 20, dtype=torch.uint8)  # 100 MiB, touched
        del big
    with meter.section("small"):
        small = torch.ones(1 << 20, dtype=torch.uint8)
        del small
    meter.enter_stage("done")
    assert peaks["big"] >= peaks["small"] + 90, peaks
    assert peaks["timing"] == max(peaks["big"], peaks["small"]), peaks  # the stage covers both


class _OomOnce(torch.nn.Module):
    """A float64 reference that runs out of GPU memory on its first call."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        if self.calls == 1:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 14.00 GiB")
        return x * 2


def test_a_float64_reference_that_does_not_fit_runs_on_the_host(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture) -> None:
    w = Worker({"options": OPTS.to_dict()}, tmp_path / "progress")
    w.ref, w.ref64 = _OomOnce().float(), _OomOnce().double()
    w.ref.calls = 1  # the fp32 reference does fit
    w.ref64_device = "cuda"  # as on a GPU host; the host path is the same code
    x = torch.randn(5, 3)
    ref64, ref32, mutated, _ = w.reference_outputs([x])
    assert w.ref64_device == "cpu" and w.ref64.calls == 2
    assert ref64.dtype == torch.float64 and torch.equal(ref64, x.double() * 2)
    assert torch.equal(ref32, x * 2) and not mutated
    assert "does not fit on the GPU" in capsys.readouterr().out
    assert "reference" in w.result.peak_memory_mb


def test_double_clone_copies_once_and_never_aliases() -> None:
    x32, x64, idx = torch.randn(4, 3).t(), torch.randn(3, dtype=torch.float64), torch.arange(3)
    c32, c64, cidx = H.double_clone([x32, x64, idx])
    assert c32.dtype == torch.float64 and c32.stride() == x32.stride()  # the layout is kept
    assert torch.equal(c32, x32.double()) and torch.equal(c64, x64) and torch.equal(cidx, idx)
    assert all(a.data_ptr() != b.data_ptr() for a, b in ((c64, x64), (cidx, idx)))


def test_largest_live_names_what_the_process_holds() -> None:
    """What a baseline that fell back for want of GPU memory logs: the judge's largest tensors,
    grouped by shape and dtype, a storage seen through two views counted once. (Other tests' tensors
    may be alive in this process too: the groups are found by their own odd shapes.)"""
    big = [torch.empty(1531, 1027) for _ in range(3)]  # 6 MiB each, 18 MiB together
    view = big[0][:10]  # the same storage: not counted again
    wide = torch.empty(4093, 1021, dtype=torch.float64)  # 32 MiB
    text = largest_live("cpu", n=1000)
    groups = text.split("; ")
    three = next(i for i, g in enumerate(groups) if g.startswith("3 x (1531, 1027) float32 0.02 GiB"))
    one = next(i for i, g in enumerate(groups) if g.startswith("1 x (4093, 1021) float64 0.03 GiB"))
    assert one < three, text  # the larger group first
    assert "(10, 1027)" not in text
    del big, view, wide

"""Timing and accounting (issue 35, class 4): every number in a verdict is the judge's, and what the
candidate process says is at most a cross-check. Each test checks what the hole let through (a
number believed, a cache hit, a run told apart, a kernel claimed), not only the verdict:
- time: the CPU's runtime is the judge's clock less a null forward, the GPU's events must agree with
  it (`clock_mismatch`), poison fills are taken out only up to the judge's own fill, and work
  deferred into the copy of the output counts or is rejected (`deferred_work`);
- checked and timed runs are one command, poisoned alike, on values no other run had;
- the kernel count is what the candidate process saw launched AND the judge's parse of the source
  finds to be a Triton kernel.
End to end through the real judge (CPU and Triton's interpreter, or the GPU under KS_ATTACK_DEVICE:
attack_device.py; `_run_worker` where an attack needs to get past the static checks), and the
judge's arithmetic on fake runs where a lie needs a clock the integrity check would stop."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from attack_device import DEVICE, needs_device
from kernelskill.eval.api import _run_worker
from kernelskill.eval.candidate import poison
from kernelskill.eval.judge import remote_timing as RT
from kernelskill.eval.judge.kernel_names import defined_kernels, judged_kernels
from kernelskill.eval.judge.link import CandidateLink
from kernelskill.eval.judge.remote import Forward, Remote
from kernelskill.eval.problem import load_problem
from kernelskill.eval.timing.protocol import Timer, clock_mismatch, fill_cap
from kernelskill.eval.types import EvalOptions, EvalResult, Rejected

PROBLEM = (Path(__file__).resolve().parents[1] / "fixtures" / "relu_scale.py").read_text()
OPTS = EvalOptions(device=DEVICE, size="small", trials=2, timeout_s=120, baselines=False)
pytestmark = needs_device
HEAD = "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n"
INIT = ("class ModelNew(nn.Module):\n    def __init__(self, cols):\n        super().__init__()\n"
        "        self.bias = nn.Parameter(torch.randn(cols))\n")
RIGHT = "torch.relu(x + self.bias) * 2.0"


def cand(forward_body: str, extra: str = "", init_extra: str = "") -> str:
    body = "\n".join("        " + ln for ln in forward_body.strip("\n").splitlines())
    return f"{HEAD}{extra}\n{INIT}{init_extra}\n    def forward(self, x):\n{body}\n"


def judge(source: str, problem: str = PROBLEM) -> EvalResult:
    """The judge without the static checks in front of it."""
    return _run_worker(problem, source, OPTS, "problem.py", "cand.py", EvalResult(device=DEVICE))


def accepted(r: EvalResult) -> None:
    assert r.correct and r.stage == "done", (r.stage, r.failed_checks, r.reason)


def rejected(r: EvalResult, stage: str, check: str) -> None:
    assert not r.correct, "an attack was accepted"
    assert (r.stage, check in r.failed_checks) == (stage, True), (r.stage, r.failed_checks, r.reason)


# ---- time is the judge's: the bounds -----------------------------------------------------------
@pytest.mark.parametrize(("claimed", "judge_ms", "cuda", "mismatch"), [
    (2.7e-5, 2.9, True, True),   # the report of the issue: 2.7e-5 ms against 3.2 ms of wall, 0.3 protocol
    (0.6, 1.0, True, True),      # a third of a 1 ms forward hidden
    (7.0, 10.0, True, True),
    (0.95, 1.0, True, False),    # honest: the judge's clock less the null forward sees what the events saw
    (0.05, 0.22, True, False),   # a tiny forward, two medians' jitter
    (10.0, 11.5, True, False),
    (0.01, 30.0, False, True),   # a CPU forward of 30 ms reported as nothing
    (10.0, 15.0, False, False),  # a loaded 2-core machine: descheduled now and then
])
def test_the_judges_clock_bounds_the_reported_time(claimed: float, judge_ms: float, cuda: bool,
                                                  mismatch: bool) -> None:
    assert clock_mismatch(claimed, judge_ms, cuda) is mismatch


def fwd(ms: float, wall: float, fill: float = 0.0, copy: float = 0.05, idle: float | None = None) -> Forward:
    return Forward(None, False, ms, wall, ms + copy if idle is None else idle, [], None, fill, copy)


def test_fills_come_out_up_to_the_judges_own_fill_and_deferred_copy_work_counts() -> None:
    cap = fill_cap(0.1)  # the judge's own fill of the output slots: 0.1 ms
    runs = [fwd(1.0, 2.0, fill=0.1), fwd(1.0, 2.0, fill=0.9), fwd(1.0, 2.0, copy=3.05)]
    costs = RT.run_costs(runs, cap, null_copy_ms=0.05)
    assert costs[0] == pytest.approx(0.9)            # an honest fill of the output: taken out
    assert costs[1] == pytest.approx(1.0 - cap)      # a claimed 0.9 ms of fills: only the cap
    assert costs[2] == pytest.approx(1.0 + 3.0)      # 3 ms more than an honest copy: the candidate's


class FakeWorker(SimpleNamespace):
    """What time_remote reads of the judge: the problem, the reference's outputs, the ping."""

    def reference_outputs(self, inputs: list[Any]) -> tuple[Any, Any, bool, list[Any]]:
        with torch.no_grad():
            y = self.ref(*inputs)
        return y.double(), y, False, inputs


class FakeRemote:
    """A candidate process whose reports the test chooses; its outputs are right, so only the times
    are in question. `times(i)` gives run i's (ms, wall_ms, fill_ms, copy_ms); a null run's wall
    time is `null_ms`."""

    def __init__(self, ref: torch.nn.Module, times: Any, null_ms: float):
        self.ref, self.times, self.null_ms, self.calls = ref, times, null_ms, 0
        self.sets: dict[int, Any] = {}
        self.slots = [torch.zeros(33, 70)]

    def add_set(self, k: int, inputs: list[Any]) -> None:
        self.sets[k] = SimpleNamespace(items=inputs)

    def forward(self, set_id: int, inputs: list[Any], purpose: str, check: str) -> Forward:
        ms, wall, fill, copy = self.times(self.calls)
        self.calls += 1
        with torch.no_grad():
            out = self.ref(*inputs)
        return Forward(out, False, ms, wall, ms + copy, [], None, fill, copy)

    def null_forward(self, set_id: int) -> Forward:
        return Forward(None, False, 0.01, self.null_ms, 0.05, [], None, 0.0, 0.04)


def time_fake(times: Any, null_ms: float = 0.3) -> RT.CandidateTiming:
    problem = load_problem(PROBLEM, "small", "problem.py")
    torch.manual_seed(0)
    ref = problem.model_cls(*problem.get_init_inputs())
    w = FakeWorker(device="cpu", problem=problem, ref=ref, ref_mutates=False, ping_ms=0.05,
                   opts=SimpleNamespace(atol=None, rtol=None))
    timer = Timer("cpu", budget_s=0.5, min_runs=2, max_runs=5)
    return RT.time_remote(w, FakeRemote(ref, times, null_ms), timer, n_sets=2)


def test_unjudged_runs_keep_no_output() -> None:
    """The baseline process's runs (judged=False) are timed, never checked: the judge keeps none of
    their outputs, which on a 2 GiB output filled the card after 28 runs."""
    import weakref

    problem = load_problem(PROBLEM, "small", "problem.py")
    ref = problem.model_cls(*problem.get_init_inputs())
    remote = FakeRemote(ref, lambda i: (1.0, 1.5, 0.0, 0.04), 0.3)
    outs: list[weakref.ref] = []
    alive: list[int] = []
    forward = remote.forward

    def watched(*args: Any) -> Forward:
        alive.append(sum(r() is not None for r in outs))
        f = forward(*args)
        outs.append(weakref.ref(f.out))
        return f

    remote.forward = watched  # type: ignore[method-assign]
    w = FakeWorker(device="cpu", problem=problem, ref=ref, ref_mutates=False, ping_ms=0.05,
                   opts=SimpleNamespace(atol=None, rtol=None))
    t = RT.time_remote(w, remote, Timer("cpu", budget_s=0.5, min_runs=8, max_runs=8), n_sets=2, judged=False)
    assert t.runs == 8 and len(outs) == 8 + 5  # warm-ups and probes too
    assert max(alive) == 0, alive  # no earlier run's output outlives its run


def test_on_the_cpu_a_tiny_reported_time_is_not_the_runtime() -> None:
    # The numbers: 2.7e-5 ms reported against 3.2 ms of the judge's wall clock. Within the
    # CPU's slack it is not rejected, but the runtime is the judge's clock less the null forward.
    t = time_fake(lambda i: (2.7e-5, 3.2, 0.0, 0.04))
    assert t.reported_ms == pytest.approx(2.7e-5)
    assert t.median_ms == pytest.approx(3.2 - 0.3) and t.wall_ms == pytest.approx(2.9)
    assert t.overhead_ms == pytest.approx(0.3) and t.checked == t.runs + 5  # warm-ups and probes too


def test_on_the_cpu_a_gross_lie_is_a_clock_mismatch() -> None:
    with pytest.raises(Rejected) as e:
        time_fake(lambda i: (0.01, 30.0, 0.0, 0.04))
    assert e.value.checks == ("clock_mismatch",)


def test_on_the_gpu_events_far_below_the_judges_clock_are_a_clock_mismatch(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The GPU path's arithmetic on recorded runs (no GPU here): the events claim 2.7e-5 ms, the
    # judge saw 3.2 ms a call against 0.3 ms for a null forward. The older bound (1.5x + 1 ms + the
    # ping and the judge-side copies) needs more than it to trip; the calibrated one does not.
    monkeypatch.setattr(RT, "_judge_side_ms", lambda w, timer, remote: 1.0)
    timed = [fwd(2.7e-5, 3.2, copy=0.04, idle=0.05) for _ in range(20)]
    nulls = [Forward(None, False, 0.01, 0.3, 0.05, [], None, 0.0, 0.04) for _ in range(20)]
    stats = RT._stats(timed, nulls, 0.0, True, 8)  # a CUDA run: no fill is taken out
    w = SimpleNamespace(ping_ms=0.1)
    with pytest.raises(Rejected) as e:
        RT._check_clocks(w, None, None, timed, nulls, stats, True)
    assert e.value.checks == ("clock_mismatch",)
    honest = [fwd(2.85, 3.2, copy=0.04, idle=2.95) for _ in range(20)]
    RT._check_clocks(w, None, None, honest, nulls, RT._stats(honest, nulls, 0.02, True, 8), True)


# ---- time is the judge's: end to end -----------------------------------------------------------
LEAK = '''
from torch.overrides import TorchFunctionMode


class _Finish(TorchFunctionMode):
    """Does the forward's work when the evaluator copies the (empty) output into its slots."""

    def __init__(self):
        super().__init__()
        self.pending = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func is torch.Tensor.copy_ and self.pending:
            x, bias = self.pending.pop()
            return args[0].copy_(torch.relu(x + bias) * 2.0)
        return func(*args, **(kwargs or {}))


def _active(mode):
    with mode:
        yield


FINISH = _Finish()
'''


def test_a_mode_left_by_the_block_is_reported_and_the_stacks_restored() -> None:
    from torch.overrides import TorchFunctionMode

    def active(mode: TorchFunctionMode) -> Any:
        try:
            with mode:
                yield
        except RuntimeError:  # closing it: its stack entry is gone already
            pass

    kept = active(TorchFunctionMode())
    with pytest.raises(poison.ModeLeak), poison.poisoned():
        next(kept)  # entered, never left: above the evaluator's own mode
    assert poison.mode_depths() == (0, 0)  # the leaked mode popped, and the evaluator's too
    clock = poison.FillClock()
    with poison.poisoned(clock):
        assert torch.empty(1000).isnan().all() and clock.ms() > 0  # the fill is timed as such
    kept.close()


@pytest.mark.parametrize("where", ["import", "forward"])
def test_work_deferred_into_the_copy_of_the_output_is_rejected(where: str) -> None:
    # The forward returns an empty (poisoned) tensor and a torch function mode it left active does
    # the work in the evaluator's copy into the slots, outside the timed forward. A mode left
    # by the import is below the evaluator's own; one entered in forward is above it.
    keep = "_KEEP = _active(FINISH)\nnext(_KEEP)\n" if where == "import" else ""
    body = ("FINISH.pending.append((x, self.bias))\n"
            + ("" if where == "import" else "self.keep = _active(FINISH)\nnext(self.keep)\n")
            + "return torch.empty_like(x)")
    r = judge(cand(body, LEAK + keep))
    rejected(r, "compile", "deferred_work")
    assert "mode" in (r.reason or ""), r.reason


# ---- checked and timed runs look the same ------------------------------------------------------
class RecordingLink:
    """A candidate process that answers every command well and remembers what it was sent."""

    stage = "correctness"

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def request(self, msg: dict[str, Any], fds: list[int] | None = None) -> dict[str, Any]:
        self.sent.append(dict(msg))
        desc = {"t": "tensor", "exact": True, "type": "Tensor", "dtype": "float32", "shape": [3, 4],
                "device": "cpu", "layout": "strided", "alias": False}
        return {"ok": True, "ms": 1.0, "idle_ms": 1.0, "fill_ms": 0.0, "copy_ms": 0.0, "out": desc,
                "kernels": []}


def test_a_checked_run_and_a_timed_run_are_the_same_command() -> None:
    link = RecordingLink()
    remote = Remote(link, "cpu", None)
    x = torch.randn(3, 4)
    remote.set_contract(x * 2, [x])
    remote.add_set(0, [x])
    remote.forward(0, [torch.randn(3, 4)], "trial", "runtime_error")
    remote.forward(0, [torch.randn(3, 4)], "timed", "runtime_error")
    trial, timed = link.sent[-2:]
    assert trial == timed == {"cmd": "run", "set": 0, "poison": 2 * x.numel() * 4}


PROBE = '''
def _checked(x):
    """What a candidate could probe to tell a checked run from a timed one: is an empty tensor
    poisoned, is the poisoning's wrapper of torch.empty in place?"""
    return bool(torch.empty(64, device=x.device).isnan().all()) and hasattr(torch.empty, "__wrapped__")
'''


def test_a_candidate_probing_the_poisoning_sees_every_run_poisoned() -> None:
    # Garbage whenever a run looks unpoisoned. On the CPU every run's output is checked, warm-ups,
    # probes and timed runs included (on the GPU 8 sampled runs: garbage on every timed run would
    # be caught), so acceptance means the probe never fired: the timing stage ran and no run
    # looked different (before, timed runs had no poisoning).
    r = judge(cand(f"if not _checked(x):\n    return torch.zeros_like(x)\nreturn {RIGHT}", PROBE))
    accepted(r)
    assert r.runtime_ms and r.runtime_ms > 0


CACHE = '''
_SEEN = {}


def _key(x):
    """A few sampled input values: a cache keyed by content, not by pointer or call count."""
    flat = x.reshape(-1)
    n = flat.numel()
    return tuple(round(float(flat[i]), 6) for i in (0, n // 3, n // 2, n - 1))
'''
# Garbage on a hit, so that a hit on any run (each is checked on the CPU) fails the evaluation.
CACHED = cand(f"k = _key(x)\nif k in _SEEN:\n    return torch.zeros_like(x)\n_SEEN[k] = True\nreturn {RIGHT}",
              CACHE)


def test_a_cache_keyed_by_sampled_input_values_never_hits() -> None:
    # Every run, warm-ups included, gets values drawn under a seed no other run used.
    accepted(judge(CACHED))


def test_the_same_cache_hits_where_inputs_repeat() -> None:
    # Control: where get_inputs() ignores the seed, the cache hits on the second forward.
    fixed = PROBLEM.replace("torch.randn(ROWS, COLS)",
                            "torch.linspace(-1, 1, ROWS * COLS).reshape(ROWS, COLS)")
    rejected(judge(CACHED, fixed), "correctness", "wrong_output")


# ---- the kernel count is the judge's ------------------------------------------------------------
@pytest.mark.parametrize(("source", "kernels"), [
    ("import triton\n@triton.jit\ndef k(x):\n    pass\n", {"k"}),
    ("import triton\n@triton.jit(do_not_specialize=['n'])\ndef k(x, n):\n    pass\n", {"k"}),
    ("import triton\n@triton.autotune(configs=[], key=[])\n@triton.jit\ndef k(x):\n    pass\n", {"k"}),
    ("import triton\n@triton.heuristics({})\n@triton.jit\ndef k(x):\n    pass\n", {"k"}),
    ("import triton as tr\n@tr.jit\ndef k(x):\n    pass\n", {"k"}),
    ("from triton import jit as J\n@J\ndef k(x):\n    pass\n", {"k"}),
    ("import triton\ndef f(x):\n    pass\nk = triton.jit(f)\n", {"f"}),
    ("import torch\n@torch.no_grad()\ndef k(x):\n    pass\nclass ModelNew:\n    def forward(self, x):\n"
     "        return x\n", set()),
    # Not triton.jit to the parse: an honest candidate has no reason to hide its decorator.
    ("import triton\njit = vars(triton)['jit']\n@jit\ndef k(x):\n    pass\n", set()),
    ("def broken(:\n", set()),
])
def test_the_judge_finds_kernels_in_the_source(source: str, kernels: set[str]) -> None:
    assert defined_kernels(source) == kernels


def test_claimed_kernels_the_source_does_not_define_are_dropped() -> None:
    src = "import triton\n@triton.jit\ndef real(x):\n    pass\n"
    assert judged_kernels(["real", "imaginary", 3], src) == ["real"]  # type: ignore[list-item]
    assert judged_kernels(["relu_kernel", "matmul_kernel"], "import torch\n") == []


FAKE_KERNEL = '''
from triton.runtime.jit import JITFunction


class _Claim:
    """Enough of a kernel for the launch recorder of the candidate process; nothing is compiled."""

    def __init__(self, fn):
        self.fn = fn


def fake_kernel(x_ptr):
    pass


def _claim():
    try:
        JITFunction.run(_Claim(fake_kernel))
    except Exception:
        pass
'''
# Plain PyTorch whose process reports a Triton kernel launched (no Triton kernel may run that the
# source does not decorate: eval/candidate/kernel_pin.py).
CLAIMS = cand(f"_claim()\nreturn {RIGHT}", FAKE_KERNEL)


def test_the_candidate_process_reports_a_kernel_the_judge_does_not_count() -> None:
    # The claim, seen where it is made: the candidate process reports fake_kernel as launched.
    x = torch.randn(33, 70, device=DEVICE)
    with CandidateLink(DEVICE, time.monotonic() + 120) as link:
        remote = Remote(link, DEVICE, torch.cuda.MemPool() if DEVICE == "cuda" else None)  # as the judge's
        reply = link.request({"cmd": "init", "device": DEVICE, "precision": "default", "source": CLAIMS,
                              "filename": "c.py", "weight_seed": 1, "init_values": [70]})
        assert reply["ok"], reply
        remote.set_contract(torch.relu(x), [x])
        remote.add_set(0, [x])
        claimed = remote.forward(0, [x], "trial", "runtime_error").kernels
    assert claimed == ["fake_kernel"]
    assert judged_kernels(claimed, CLAIMS) == []


def test_plain_pytorch_claiming_kernels_reports_none() -> None:
    r = judge(CLAIMS)
    accepted(r)
    assert r.custom_kernels == 0 and r.kernel_names == []

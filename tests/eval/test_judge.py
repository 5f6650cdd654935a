"""The split judge (CPU, interpreter): the candidate runs in a process of its own, and what it does
there cannot reach the reference, predict the checks, bend the output contract or move the
verdict. Attacks go past the static checks (`_run_worker`) to exercise the judge itself; each is
rejected for its own reason, and the legitimate near-misses beside them are accepted."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from kernelskill.eval import harness as H
from kernelskill.eval.api import _run_worker
from kernelskill.eval.judge.worker import Worker
from kernelskill.eval.timing.protocol import escapes_events, implausibly_fast
from kernelskill.eval.types import EvalOptions, EvalResult

PROBLEM = (Path(__file__).resolve().parents[1] / "fixtures" / "relu_scale.py").read_text()
OPTS = EvalOptions(device="cpu", size="small", trials=2, timeout_s=120, baselines=False)

HEAD = "import torch\nimport torch.nn as nn\n"
INIT = ("class ModelNew(nn.Module):\n    def __init__(self, cols):\n        super().__init__()\n"
        "        self.bias = nn.Parameter(torch.randn(cols))\n        self.calls = 0\n")
RIGHT = "torch.relu(x + self.bias) * 2.0"
SECRET_SEED = H.secret_seed


def cand(forward_body: str, extra: str = "") -> str:
    body = "\n".join("        " + ln for ln in forward_body.strip("\n").splitlines())
    return f"{HEAD}{extra}\n{INIT}\n    def forward(self, x):\n        self.calls += 1\n{body}\n"


def judge(source: str, problem: str = PROBLEM, opts: EvalOptions = OPTS) -> EvalResult:
    """The judge without the static checks in front of it."""
    return _run_worker(problem, source, opts, "problem.py", "cand.py", EvalResult(device="cpu"))


def rejected(r: EvalResult, stage: str, check: str) -> None:
    assert not r.correct, "an attack was accepted"
    assert r.stage == stage, (r.stage, r.reason)
    assert check in r.failed_checks, (r.failed_checks, r.reason)


def accepted(r: EvalResult) -> None:
    assert r.correct, (r.stage, r.failed_checks, r.reason)
    assert r.stage == "done"


# ---- class 2: the reference is not in the candidate's process ----------------------------------
SEARCH = '''
import gc
import linecache
import sys


def _subclasses(cls):
    out = []
    for sub in cls.__subclasses__():
        out += [sub] + _subclasses(sub)
    return out


def _search(name):
    """Everything in this process that looks like class `name` or the problem's source."""
    marker = "get_" + "init_inputs():"  # split: this file itself does not contain it
    found = [c for c in _subclasses(nn.Module) if c.__name__ == name]
    found += [m for m in list(sys.modules.values())
              if isinstance(getattr(m, "__dict__", None), dict) and isinstance(m.__dict__.get(name), type)]
    found += [f for f, entry in list(linecache.cache.items())
              if len(entry) > 2 and marker in "".join(entry[2])]
    return found


def _gc_search(name):
    """The garbage collector's view (the audit hook refuses it in the candidate process)."""
    return [o for o in gc.get_objects() if isinstance(o, type) and o.__name__ == name]
'''


def test_the_reference_is_nowhere_in_the_candidate_process() -> None:
    # The walker finds the candidate's own class (so the search works) and no Model, no problem
    # source: its output is right only when that is so.
    src = cand(f"own, ref = _search('ModelNew'), _search('Model')\n"
               f"return {RIGHT} + (0.0 if own and not ref else 1000.0)", SEARCH)
    accepted(judge(src))


def test_a_temporary_file_in_the_candidates_own_scratch_folder_is_fine() -> None:
    # Near miss of the worker-folder rule: Python's TemporaryFile opens the scratch folder itself
    # with O_TMPFILE, as Triton's compiler does on a GPU (an H200 run refused every candidate so).
    src = cand(f"tempfile.TemporaryFile().close()\nreturn {RIGHT}", "import tempfile\n")
    accepted(judge(src))


def test_a_gc_walk_is_refused_at_run_time() -> None:
    # Past the static checks, the audit hook stops the walk before it sees anything at all.
    rejected(judge(cand(f"return {RIGHT} + (0.0 if _gc_search('Model') else 1000.0)", SEARCH)),
             "compile", "audit")


def test_the_search_would_see_a_reference_in_its_own_process() -> None:
    # Control: with a class named Model in the candidate's process, the same walker finds it.
    src = cand(f"return {RIGHT} + (0.0 if _search('Model') else 1000.0)",
               SEARCH + "\n\nclass Model(nn.Module):\n    pass\n")
    accepted(judge(src))


# ---- class 3: checks the candidate cannot predict ----------------------------------------------
def _seeds_of_one_evaluation(monkeypatch: pytest.MonkeyPatch, source: str) -> list[int]:
    seeds: list[int] = []

    def record() -> int:
        seeds.append(SECRET_SEED())
        return seeds[-1]

    monkeypatch.setattr(H, "secret_seed", record)
    req = {"problem_source": PROBLEM, "candidate_source": source, "problem_name": "p.py",
           "candidate_name": "c.py", "options": OPTS.to_dict()}
    with tempfile.TemporaryDirectory() as d:
        accepted(Worker(req, Path(d) / "progress").run())
    return seeds


def test_seeds_differ_between_evaluations_with_the_same_options(monkeypatch: pytest.MonkeyPatch) -> None:
    a = _seeds_of_one_evaluation(monkeypatch, cand(f"return {RIGHT}"))
    b = _seeds_of_one_evaluation(monkeypatch, cand(f"return {RIGHT}"))
    assert len(a) >= 10 and len(set(a)) == len(a)  # weights, init, every trial and timed run
    assert not set(a) & set(b)
    assert OPTS.seed not in a + b


def test_inputs_regenerated_from_fixed_seeds_do_not_match() -> None:
    # The old evaluator's trial i ran on get_inputs() under seed options.seed + i.
    src = cand("torch.manual_seed(self.calls - 1)\nguess = torch.randn(x.shape)\n"
               "return torch.relu(guess + self.bias) * 2.0")
    rejected(judge(src), "correctness", "wrong_output")


@pytest.mark.parametrize("when,stage,check", [
    ("self.calls == 1", "correctness", "wrong_output"),  # the first forward is a checked trial
    ("self.calls > 5", "timing", "timed_output"),  # every call after the correctness trials
    ("self.calls == 9", "timing", "timed_output"),  # one timed call in the middle
    # Guessing timed calls from the poisoning: every run is poisoned alike now, so such a guess
    # never fires (test_timing_holes.test_a_candidate_probing_the_poisoning_sees_every_run_poisoned).
])
def test_garbage_on_some_calls_is_caught(when: str, stage: str, check: str) -> None:
    rejected(judge(cand(f"if {when}:\n    return torch.zeros_like(x)\nreturn {RIGHT}")), stage, check)


# ---- class 4: the output contract --------------------------------------------------------------
@pytest.mark.parametrize("ret,check", [
    (f"({RIGHT},)", "output_structure"),
    (f"[{RIGHT}]", "output_structure"),
    (f"({RIGHT}).as_subclass(Sub)", "output_type"),
    (f"({RIGHT}).double()", "output_dtype"),
    (f"({RIGHT})[:, :-1]", "output_shape"),
    ("x.add_(self.bias).relu_().mul_(2.0)", "output_aliases_input"),
    (f"{{'y': {RIGHT}}}", "output_structure"),
])
def test_output_contract(ret: str, check: str) -> None:
    rejected(judge(cand(f"return {ret}", "class Sub(torch.Tensor):\n    pass\n")), "correctness", check)


POSITIVE = PROBLEM.replace("torch.randn(ROWS, COLS)", "torch.rand(ROWS, COLS) + 0.01").replace(
    "torch.relu(x + self.bias) * 2.0", "torch.relu(x) * 2.0 + 0.0 * self.bias.sum()")


def test_an_abs_cheat_on_mostly_positive_inputs_fails_on_few_negatives() -> None:
    # Honest on clearly signed inputs (the randn and affine perturbations), abs() otherwise.
    src = cand("if (x < 0).float().mean() > 0.05:\n    return torch.relu(x) * 2.0 + 0.0 * self.bias.sum()\n"
               "return x.abs() * 2.0 + 0.0 * self.bias.sum()")
    r = judge(src, POSITIVE)
    rejected(r, "correctness", "wrong_output")
    assert "few negatives" in (r.reason or ""), r.reason


TUPLE = PROBLEM.replace("return torch.relu(x + self.bias) * 2.0",
                        "return torch.relu(x + self.bias) * 2.0, x.sum(dim=-1)")


@pytest.mark.parametrize("problem,ret", [
    (PROBLEM, RIGHT),  # plain PyTorch
    (PROBLEM, f"({RIGHT}).t().contiguous().t()"),  # a non-contiguous output
    (PROBLEM, f"z = torch.stack([x, {RIGHT}])\nreturn z[1]"),  # a view of an intermediate
    (TUPLE, f"{RIGHT}, x.sum(dim=-1)"),  # a tuple where the reference returns one
    (POSITIVE, "torch.relu(x) * 2.0 + 0.0 * self.bias.sum()"),
])
def test_legitimate_near_misses_are_accepted(problem: str, ret: str) -> None:
    accepted(judge(cand(ret if "return" in ret else f"return {ret}"), problem))


# ---- class 1 (in part): tampering in its own process moves nothing ------------------------------
PATCHES = '''
import time
torch.allclose = lambda *a, **k: True
torch.equal = lambda *a, **k: True
torch.Tensor.__eq__ = lambda self, other: torch.ones_like(self, dtype=torch.bool)
time.perf_counter = lambda: 0.0
'''


def test_patching_torch_and_the_clock_in_the_candidate_does_not_pass_a_wrong_output() -> None:
    # The candidate process's integrity check sees the patches as its import ends; behind it, the
    # judge compares in its own process, where the patches do not exist.
    rejected(judge(cand("return torch.relu(x + self.bias) * 3.0", PATCHES)), "compile", "integrity")


# ---- class 7 (CPU part): work the reported time does not show ----------------------------------
def test_a_clock_that_hides_the_forward_is_caught_first_by_the_integrity_check() -> None:
    # Right outputs, but every forward takes 150 ms of which the patched clock reports nothing.
    src = cand(f"_sleep(0.15)\nreturn {RIGHT}", "import time\n_sleep = time.sleep\n"
               "time.perf_counter = lambda: 0.0\n")
    rejected(judge(src), "compile", "integrity")


@pytest.mark.parametrize(("event_ms", "wall_ms", "cuda", "hidden"), [
    (1.0, 1.3, True, False),     # host launch overhead on top of the events: fine
    (0.1, 1.03, True, False),    # a tiny honest forward under the protocol (H200: 1.0 ms wall)
    (0.01, 5.0, True, True),     # the events saw almost nothing of what the wall clock saw
    (10.0, 14.0, False, False),
    (0.0, 150.0, False, True),   # a clock that hides a 150 ms forward
])
def test_the_judges_wall_clock_bounds_the_reported_time(event_ms: float, wall_ms: float, cuda: bool,
                                                        hidden: bool) -> None:
    # The backstop behind the integrity check, for a clock faked some other way.
    assert implausibly_fast(event_ms, wall_ms, overhead_ms=0.05, ping_ms=0.1, cuda=cuda) is hidden


@pytest.mark.parametrize(("event_ms", "idle_ms", "hidden"), [
    (1.0, 1.03, False),   # the synchronize's return on top of an honest forward
    (0.05, 0.12, False),  # a tiny forward with host jitter
    # H200, 2026-12-02, problems/measurements/h200-2026-12-02-cost/:
    (1.725, 3.05, True),  # a side-stream cheat that the 1 ms wall slack let through
    (0.05, 1.05, True),   # a whole 1 ms forward on a side stream, the events seeing its launch only
])
def test_the_candidates_own_idle_clock_bounds_its_events(event_ms: float, idle_ms: float,
                                                         hidden: bool) -> None:
    # No allowance for the protocol is needed: both clocks are read around the same call.
    assert escapes_events(event_ms, idle_ms, cuda=True) is hidden
    assert not escapes_events(event_ms, idle_ms, cuda=False)  # on the CPU both are one clock


FAKE_REPLY = '''
import json
import os
import socket
import struct


def _claim_success(x):
    """Speak the judge's protocol from inside forward: a reply saying all went well, sent before
    the harness has copied anything into the judge's output slots."""
    desc = {"t": "tensor", "exact": True, "type": "Tensor", "dtype": "float32", "shape": list(x.shape),
            "device": "cpu", "layout": "strided", "alias": False}
    msg = json.dumps({"ok": True, "ms": 0.001, "out": desc, "kernels": []}).encode()
    s = socket.socket(fileno=os.dup(0))
    s.sendall(struct.pack("!QI", len(msg), 0) + msg)
'''


def test_a_forged_reply_on_the_judges_pipe_carries_no_output() -> None:
    # The audit hook refuses the socket first (past it, the judge reads outputs only from its own
    # slots, poisoned before every call, so a forged reply would carry NaN).
    r = judge(cand("_claim_success(x)\nreturn torch.zeros_like(x)", FAKE_REPLY))
    rejected(r, "compile", "audit")
    assert "socket" in (r.reason or ""), r.reason


def test_a_candidate_that_dies_mid_timing_is_a_crash() -> None:
    r = judge(cand(f"if self.calls == 8:\n    _exit(3)\nreturn {RIGHT}", "from os import _exit\n"))
    rejected(r, "timing", "crash")
    assert "exit code 3" in (r.reason or ""), r.reason

"""Spare judges (eval/child.py): inside `spare_judges()` each evaluation leaves a judge started
for the next one, which then runs it; the verdict is the same signed one, and no spare, nor the
candidate process it started, outlives the context."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest
from kernelskill.eval import child as C
from kernelskill.eval.api import evaluate
from kernelskill.eval.types import EvalOptions

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
from candidates import good, wrong_scale  # noqa: E402

PROBLEM = (Path(__file__).resolve().parents[1] / "fixtures" / "relu_scale.py").read_text()


def opts(timeout_s: float = 120.0) -> EvalOptions:
    return EvalOptions(device="cpu", size="small", trials=2, timeout_s=timeout_s, baselines=False)


@pytest.fixture
def starts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """'request' for each child started with its request, 'spare' for each started ahead."""
    seen: list[str] = []
    real = C._start

    def counted(module: str, device: str, timeout_s: float, reference_only: bool, request: dict | None,
                role: str | None = None, tuning: dict | None = None):
        seen.append("spare" if request is None else "request")
        return real(module, device, timeout_s, reference_only, request, role, tuning)

    monkeypatch.setattr(C, "_start", counted)
    return seen


def marked_alive(token: str) -> list[int]:
    """Live processes whose environment carries a sandbox run's token (the judge and whatever it
    started, its candidate process included)."""
    mark, pids = f"{C.sandbox.TOKEN_VAR}={token}".encode(), []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                if mark in f.read():
                    pids.append(int(name))
        except OSError:
            continue
    return pids


def test_the_next_evaluation_runs_in_the_spare_and_nothing_outlives_the_context(starts: list[str]) -> None:
    with C.spare_judges():
        first = evaluate(PROBLEM, good(), opts())
        spare = C._SPARES.child
        assert spare is not None and spare.run.proc.poll() is None
        time.sleep(1.0)  # its candidate process is started too
        token = spare.run.token
        assert len(marked_alive(token)) >= 2, "a spare starts its candidate process ahead as well"
        second = evaluate(PROBLEM, wrong_scale(), opts())
        assert C._SPARES.child is not spare and spare.run.proc.poll() is not None
        last = C._SPARES.child
    assert first.correct, first.reason
    assert not second.correct and second.stage == "correctness", second.reason  # a real verdict
    assert starts == ["request", "spare", "spare"]  # the second evaluation started nothing of its own
    assert C._SPARES.child is None and last.run.proc.poll() is not None
    assert marked_alive(last.run.token) == [] and marked_alive(token) == []


def test_a_spare_for_another_timeout_is_discarded_not_used(starts: list[str]) -> None:
    with C.spare_judges():
        assert evaluate(PROBLEM, good(), opts(120.0)).correct
        unused = C._SPARES.child
        r = evaluate(PROBLEM, good(), opts(90.0))
    assert r.correct, r.reason
    assert starts == ["request", "spare", "request", "spare"]
    assert unused.run.proc.poll() is not None and marked_alive(unused.run.token) == []


def test_no_spare_outside_the_context(starts: list[str]) -> None:
    assert evaluate(PROBLEM, good(), opts()).correct
    assert starts == ["request"] and C._SPARES.child is None


def test_a_spare_that_died_while_waiting_is_replaced(starts: list[str]) -> None:
    with C.spare_judges():
        assert evaluate(PROBLEM, good(), opts()).correct
        C.sandbox.kill_all(C._SPARES.child.run)  # killed while idle (out of memory, a signal)
        r = evaluate(PROBLEM, good(), opts())
    assert r.correct, r.reason
    assert starts == ["request", "spare", "request", "spare"]


def test_an_early_spare_starts_with_the_evaluation_and_is_freed_when_it_ends(
        starts: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Where spares start early (the GPU's rule, here on the CPU): the next evaluation's judge
    starts while this one runs, held (no FREE on its stdin, so on a GPU no CUDA context) until
    this one's verdict is in; it then runs the next evaluation as any spare does."""
    monkeypatch.setattr(C, "EARLY_SPARE_DEVICES", ("cpu",))
    held_at_verdict: list[bool] = []
    real_finish = C._Started.finish

    def finish(self: C._Started, request: dict, timeout_s: float, quiet=None):  # noqa: ANN001, ANN202
        run = real_finish(self, request, timeout_s, quiet)
        spare = C._SPARES.child
        held_at_verdict.append(spare is not None and not spare.freed and spare.run.proc.poll() is None)
        starts.append("verdict")
        return run

    monkeypatch.setattr(C._Started, "finish", finish)
    with C.spare_judges():
        first = evaluate(PROBLEM, good(), opts())
        spare = C._SPARES.child
        assert spare is not None and spare.freed and spare.run.proc.poll() is None
        second = evaluate(PROBLEM, wrong_scale(), opts())
        last = C._SPARES.child
    assert first.correct, first.reason
    assert not second.correct and second.stage == "correctness", second.reason
    # Each spare started before the verdict of the evaluation it follows, and was held until then.
    assert starts == ["request", "spare", "verdict", "spare", "verdict"]
    assert held_at_verdict == [True, True]
    assert spare.run.proc.poll() is not None and marked_alive(spare.run.token) == []
    assert last.run.proc.poll() is not None and marked_alive(last.run.token) == []


def test_timing_waits_until_the_spare_started_beside_it_is_parked(
        starts: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A spare started with an evaluation spends its start-up (interpreter, torch, its candidate
    process) beside that evaluation's judge, but not beside its timed runs: the judge's timing
    stage waits for its stdin to close, which the parent does once the spare is parked. Here the
    parent holds its wait HOLD_S longer once the judge has entered its timing stage: the judge's
    clock shows that stage held up before its first timed run."""
    monkeypatch.setattr(C, "EARLY_SPARE_DEVICES", ("cpu",))
    hold_s = 4.0
    real_wait, real_finish = C._Started.wait_parked, C._Started.finish
    judging: list[C._Started] = []
    parked_then: list[tuple[bool, int]] = []

    def finish(self: C._Started, request: dict, timeout_s: float, quiet=None):  # noqa: ANN001, ANN202
        judging.append(self)
        return real_finish(self, request, timeout_s, quiet)

    def wait_parked(self: C._Started, stop, cap_s: float = C.PARK_CAP_S) -> None:  # noqa: ANN001
        real_wait(self, stop, cap_s)
        parked_then.append(((self.dir / C.PARKED).exists(), len(marked_alive(self.run.token))))
        end = time.monotonic() + 60
        while time.monotonic() < end and not stop() and \
                C.sandbox.read_capped(judging[-1].dir / "progress", 64).strip() != "timing":
            time.sleep(0.01)
        time.sleep(hold_s)

    monkeypatch.setattr(C._Started, "finish", finish)
    monkeypatch.setattr(C._Started, "wait_parked", wait_parked)
    with C.spare_judges():
        r = evaluate(PROBLEM, good(), opts())
    assert r.correct, r.reason
    assert parked_then == [(True, parked_then[0][1])] and parked_then[0][1] >= 2, \
        "parked once its own candidate process runs too"
    held = r.stage_seconds.get("timing.imports", 0.0) + r.stage_seconds["timing.quiet"]
    assert held >= hold_s - 0.5, r.stage_seconds  # its own imports, then the wait for the close
    alone = evaluate(PROBLEM, good(), opts())  # no spare: stdin closed with the request
    # Rationale: half the hold, not a fixed fraction of a second: a loaded 2-core CI machine can
    # take a second to schedule the judge, which is no wait for the parent.
    assert alone.stage_seconds["timing.quiet"] < hold_s / 2, alone.stage_seconds


def test_a_held_spare_taken_before_it_is_freed_still_runs_its_evaluation(starts: list[str]) -> None:
    """A spare that never got FREE (another thread took it while its evaluation was still running)
    gets GO alone and runs the evaluation as a judge started with its request does."""
    with C.spare_judges():
        C._SPARES.refill(C.JUDGE, "cpu", 120.0, False, held=True)
        assert C._SPARES.child is not None and not C._SPARES.child.freed
        r = evaluate(PROBLEM, wrong_scale(), opts())
    assert not r.correct and r.stage == "correctness", r.reason
    assert starts == ["spare", "spare"]


@pytest.mark.gpu
def test_a_spare_judge_on_the_gpu_gives_the_same_verdicts(starts: list[str]) -> None:
    # The spare creates its CUDA context and imports Inductor while it waits; its evaluation times
    # the baselines like any other. Printed, not asserted: where the start-up seconds went.
    gpu = EvalOptions(device="cuda", size="small", trials=2, timeout_s=300.0)
    with C.spare_judges():
        cold = evaluate(PROBLEM, good(), gpu)
        time.sleep(15.0)  # the graph writing the next candidate
        warm = evaluate(PROBLEM, good(), gpu)
        wrong = evaluate(PROBLEM, wrong_scale(), gpu)
    for name, r in (("cold", cold), ("warm", warm)):
        s = r.stage_seconds
        print(f"{name}: {r.elapsed_s} s in the judge, start {s.get('processes.start')} s, "
              f"load {s.get('load')} s, imports {s.get('timing.imports')} s, speedup {r.speedup_vs_eager}")
    assert cold.correct and warm.correct, (cold.reason, warm.reason)
    assert warm.speedup_vs_eager is not None and warm.compile_ms is not None
    assert not wrong.correct and wrong.stage == "correctness", wrong.reason
    assert starts == ["request", "spare", "spare", "spare"]

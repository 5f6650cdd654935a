"""Eager (and, on a GPU, torch.compile) timed in a process of their own by the candidate's protocol
(eval/judge/baselines.py), and the judge's in-process timing wherever that process cannot run the
reference. On the CPU the timings themselves are never compared: only where they were taken."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from kernelskill.authors.builtin.emit import assemble_verbatim
from kernelskill.eval.api import evaluate
from kernelskill.eval.judge import baselines
from kernelskill.eval.types import EvalOptions, Rejected

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
sys.path.insert(0, str(FIXTURES))
from candidates import good  # noqa: E402

PROBLEM = (FIXTURES / "relu_scale.py").read_text()


def _opts(where: str) -> EvalOptions:
    return EvalOptions(device="cpu", size="small", trials=2, timeout_s=120, baselines_in=where)


def test_a_kept_reference_and_its_baseline_are_timed_by_the_same_process_kind() -> None:
    kept = assemble_verbatim(PROBLEM, "the reference verbatim")
    r = evaluate(PROBLEM, kept, _opts("process"))
    assert r.correct, r.reason
    assert r.baselines_in == "process", r.log_tail[-1500:]
    assert r.eager_ms is not None and r.eager_ms > 0 and r.runtime_ms is not None
    assert r.stage_seconds.get("timing.baselines", 0) > 0  # the baseline process's own part
    assert "timing.eager" not in r.stage_seconds  # nothing timed in the judge


def test_on_the_cpu_auto_times_the_baselines_in_the_judge() -> None:
    r = evaluate(PROBLEM, good(), _opts("auto"))
    assert r.correct, r.reason
    assert r.baselines_in == "judge" and r.eager_ms is not None
    assert "timing.baselines" not in r.stage_seconds and "timing.eager" in r.stage_seconds


def test_a_reference_the_process_cannot_run_is_timed_in_the_judge() -> None:
    # The baseline process runs the reference under the candidate's guard, which refuses modules
    # outside the allowlist; the judge imports the problem freely. The evaluation still succeeds.
    problem = PROBLEM.replace("import torch\n", "import wave\nimport torch\n", 1)
    r = evaluate(problem, good(), _opts("process"))
    assert r.correct, r.reason
    assert r.baselines_in == "judge", r.log_tail[-1500:]
    assert r.eager_ms is not None and r.eager_ms > 0
    assert "baseline process could not time the reference" in r.log_tail


class _RefusingLink:
    """A baseline process whose init is refused, then one that dies: both mean time in the judge."""

    def __init__(self, how: str):
        self.how, self.stage, self.closed = how, "load", False

    def close(self) -> None:
        self.closed = True

    def request(self, msg: dict, fds: list | None = None) -> dict:
        if self.how == "dies":
            raise Rejected(self.stage, "candidate process died (signal SIGKILL) during timing", "crash")
        return {"ok": False, "error": "ModelNew(*get_init_inputs()) failed: boom"}


class _Worker:
    """What time_in_process reads of the judge, before it times anything."""

    class result:  # noqa: N801 (a namespace standing for EvalResult)
        stage = "timing"

    device, req = "cpu", {"problem_name": "p.py"}
    weight_seed, init_values = 0, [70]

    class policy:  # noqa: N801
        name = "default"

    class problem:  # noqa: N801
        source = PROBLEM


@pytest.mark.parametrize("how", ["refuses", "dies"])
def test_a_baseline_process_that_fails_gives_none(how: str, capsys: pytest.CaptureFixture) -> None:
    link = _RefusingLink(how)
    found = baselines.time_in_process(_Worker(), link, None, 2)
    assert found is None and link.closed  # its memory freed before the judge times eager
    assert "baselines are timed in the judge" in capsys.readouterr().out


@pytest.mark.parametrize(("where", "device", "expected"), [
    ("auto", "cuda", True), ("auto", "cpu", False), ("process", "cpu", True), ("judge", "cuda", False)])
def test_where_the_baselines_are_timed(where: str, device: str, expected: bool) -> None:
    class W:
        opts = EvalOptions(device=device, baselines_in=where)

    W.device = device
    assert baselines.wanted(W()) is expected
    W.opts = EvalOptions(device=device, baselines_in=where, baselines=False)
    assert baselines.wanted(W()) is False


def test_only_the_baseline_process_compiles() -> None:
    # "compile" runs torch.compile's first call outside the guard: never for a candidate.
    from kernelskill.eval.candidate.main import Candidate

    reply = Candidate(sock=None).compile({"cmd": "compile"}, [])
    assert reply["ok"] is False and "baseline process" in reply["error"]


def test_the_baseline_process_imports_torch_compile_before_its_guard(tmp_path: Path) -> None:
    # Started with WARM_FLAG, the process imports torch.compile's stack in the background; init
    # waits for it before entering the guard, so no import (filelock adds an audit hook on some
    # hosts) runs beside guarded code. The reference's forward then runs guarded as usual.
    import time

    from kernelskill.eval.judge.link import CandidateLink
    from kernelskill.eval.timing.warm_imports import WARM_FLAG

    with CandidateLink("cpu", time.monotonic() + 120, log_name="baseline.log", args=(WARM_FLAG,),
                       role="baseline") as link:
        reply = link.request({"cmd": "init", "device": "cpu", "precision": "default",
                              "source": PROBLEM + baselines.REFERENCE_ALIAS, "filename": "relu_scale.py",
                              "weight_seed": 1, "init_values": [70], "reference": True})
        assert reply.get("ok"), reply
        assert [tuple(s) for s in reply["params"]] == [(70,)]
        argv = (Path(f"/proc/{link.proc.pid}/cmdline").read_bytes().split(b"\0"))
        assert WARM_FLAG.encode() in argv  # the sandbox's command line ends with the process's
        assert link.log == link.scratch / "baseline.log" and link.log.exists()
    assert not link.scratch.exists()


def test_the_eval_command_says_where_the_baselines_were_timed(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture) -> None:
    from kernelskill.cli.main import main

    cand = tmp_path / "kept.py"
    cand.write_text(assemble_verbatim(PROBLEM, "the reference verbatim"))
    args = ["eval", str(FIXTURES / "relu_scale.py"), str(cand), "--device", "cpu", "--size", "small",
            "--trials", "2"]
    assert main([*args, "--baselines-in", "process"]) == 0
    assert "baselines timed in the reference's own process" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exited:  # argparse's usage error
        main([*args, "--baselines-in", "nowhere"])
    assert exited.value.code == 2


def test_baselines_handed_over_are_reused_and_nothing_is_timed_for_them() -> None:
    """A later candidate of the same problem (known_baselines): no baseline process, no eager run
    in the judge, the handed-over numbers in the result and marked so."""
    opts = _opts("process")
    opts.known_baselines = [1.25, 0.75]
    r = evaluate(PROBLEM, good(), opts)
    assert r.correct, r.reason
    assert r.baselines_in == "reused" and r.eager_ms == 1.25
    assert r.compile_ms is None  # no torch.compile baseline on the CPU, handed over or not
    assert not any(k in r.stage_seconds for k in ("timing.baselines", "timing.eager", "timing.torch_compile"))


def test_rank_timing_is_recorded_and_an_unknown_mode_is_a_usage_error() -> None:
    opts = _opts("judge")
    opts.timing_mode = "rank"
    r = evaluate(PROBLEM, good(), opts)
    assert r.correct and r.timing_mode == "rank" and r.runtime_ms is not None
    opts.timing_mode = "fast"
    bad = evaluate(PROBLEM, good(), opts)
    assert bad.usage_error and "timing_mode 'fast'" in (bad.reason or "")

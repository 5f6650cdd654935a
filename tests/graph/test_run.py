"""Whole runs of the graph on the CPU with the scripted author: every edge, resume after a kill."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kernelskill.graph.runner import run
from kernelskill.graph.threads import stored_state, unfinished
from kernelskill.state.graph_state import GraphState, RunSettings
from kernelskill.state.records import Problem

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
sys.path.insert(0, str(FIXTURES))
from candidates import good, syntax_error, wrong_scale  # noqa: E402

PROBLEM = Problem(name="relu_scale", path=str(FIXTURES / "relu_scale.py"),
                  source=(FIXTURES / "relu_scale.py").read_text(), size="small")


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    from kernelskill.nodes.runtime import set_config
    from kernelskill.state.config import KernelSkillConfig

    set_config(KernelSkillConfig())


def settings(script: list[str], rounds: int, repairs: int) -> RunSettings:
    return RunSettings(device="cpu", size="small", author="scripted", variants=1, script=script,
                       rounds=rounds, repairs=repairs, trials=2, baselines=False, eval_timeout_s=120)


def test_every_edge(tmp_path: Path) -> None:
    script = [syntax_error(),     # generator -> reviewer: compile error -> repairer
              good(1024),         # repairer -> reviewer: correct -> profiler -> planner (round 1)
              wrong_scale(),      # generator(apply) -> reviewer: incorrect -> repairer
              good(512),          # repairer -> reviewer: correct -> profiler -> planner (round 2)
              wrong_scale(256),   # generator(apply) -> reviewer: incorrect -> repairer
              syntax_error(256)]  # repairer -> reviewer: repairs spent -> planner (round 3)
    # (Distinct sources: a byte-identical repeat would not be judged again; test_repeats.py.)
    # round 3: generator finds no scripted reply (author error) -> planner: budget spent -> finalize
    lines: list[str] = []
    final = run(PROBLEM, settings(script, rounds=3, repairs=1), "t-edges", tmp_path / "ck.sqlite",
                tmp_path / "out", say=lines.append)
    nodes = [a.node for a in final.attempts]
    outcomes = [a.outcome for a in final.attempts]
    assert outcomes[:6] == ["compile-error", "correct", "incorrect", "correct", "incorrect", "compile-error"]
    assert nodes[:6] == ["generator", "repairer", "generator", "repairer", "generator", "repairer"]
    assert final.attempts[-1].stage == "author" and "no reply" in (final.attempts[-1].error or "")
    assert final.best is not None and final.best_verdict.correct
    assert final.round == 3 and "round budget" in (final.stop_reason or "")
    # Short-term memory: planned skills were never repeated.
    applied = [a.skill_id for a in final.attempts if a.node == "generator" and a.skill_id]
    assert len(applied) == len(set(applied)) == 3
    assert [p.round for p in final.plans] == [1, 2, 3] and all(p.move == "ranked" for p in final.plans)
    assert any(line.startswith("repairer:") for line in lines) and any("profiler:" in x for x in lines)
    # Each evaluation's wall time is kept with its attempt and said on the reviewer's line.
    judged = [a for a in final.attempts if a.stage != "author"]
    assert len(judged) == 6 and all(a.eval_s is not None for a in judged)
    assert sum(a.eval_s for a in judged) > 1.0  # the syntax error fails in the static checks: ~0 s
    assert final.attempts[-1].eval_s is None  # the author gave no candidate: nothing was evaluated
    reviews = [ln for ln in lines if ln.startswith("reviewer:")]
    assert len(reviews) == 6 and all("[evaluated in " in ln for ln in reviews), reviews
    solution = (tmp_path / "out" / "solution.py").read_text()
    assert "class ModelNew" in solution and "relu_scale_kernel" in solution
    assert (tmp_path / "out" / "report.json").exists()


def test_no_correct_candidate_leaves_the_reference(tmp_path: Path) -> None:
    final = run(PROBLEM, settings([wrong_scale(), wrong_scale()], rounds=2, repairs=1), "t-ref",
                tmp_path / "ck.sqlite", tmp_path / "out", say=lambda _: None)
    # The repairer's last fallback level is the reference verbatim: the run ends on it, said plainly.
    assert final.best is not None and final.best.author == "reference" and final.best_verdict.correct
    text = (tmp_path / "out" / "solution.py").read_text()
    assert "nothing better" in text and "class ModelNew" in text
    import json

    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["solution_is_reference"] is True
    # It stopped on its round budget, and the stop line says whose file was delivered.
    assert "the reference is the solution" in final.stop_reason, final.stop_reason


RUNNER = """
import sys, time
from pathlib import Path
sys.path.insert(0, {fixtures!r})
from candidates import good, wrong_scale
from kernelskill.graph.runner import run
from kernelskill.state.graph_state import RunSettings
from kernelskill.state.records import Problem
p = Problem(name="relu_scale", path={path!r}, source=Path({path!r}).read_text(), size="small")
s = RunSettings(device="cpu", size="small", author="scripted", variants=1, trials=2, baselines=False,
                rounds={rounds}, repairs=1, script=[good(1024), wrong_scale(), good(256), good(128)])
run(p, s, "t-resume", Path({db!r}), Path({out!r}), say=lambda line: print(line, flush=True))
"""


def test_a_thread_is_finished_only_when_its_checkpoint_has_no_task() -> None:
    assert unfinished(("reviewer",), ["reviewer"]) == "reviewer"
    assert unfinished((), ["reviewer"]) == "reviewer (its result was saved)"
    assert unfinished((), []) is None


# A crash between a node's saved result and the step's checkpoint: LangGraph keeps the result as a
# pending write of the step before, whose snapshot then lists no node still to run.
CRASH_AFTER_REVIEW = """
import os
from langgraph.checkpoint.sqlite import SqliteSaver
_put_writes = SqliteSaver.put_writes
def put_writes(self, config, writes, task_id, task_path=""):
    _put_writes(self, config, writes, task_id, task_path)
    if any(channel == "attempts" and value for channel, value in writes):  # the reviewer's, on disk
        os._exit(9)
SqliteSaver.put_writes = put_writes
"""


def test_crash_after_a_saved_result_resumes_and_is_not_called_finished(tmp_path: Path) -> None:
    db, out = tmp_path / "ck.sqlite", tmp_path / "out"
    code = CRASH_AFTER_REVIEW + RUNNER.format(fixtures=str(FIXTURES), path=PROBLEM.path, db=str(db),
                                              out=str(out), rounds=1)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 9, done.stderr[-2000:]
    # Read without the graph, the thread is its last checkpoint: before the review, options kept.
    stored = stored_state(db, "t-resume")
    assert stored is not None and stored.attempts == [] and stored.settings.script
    lines: list[str] = []
    final = run(PROBLEM, settings([], 3, 1), "t-resume", db, out, say=lines.append)
    assert not any("already finished" in ln for ln in lines), lines
    assert lines[0] == "resuming thread t-resume at reviewer (its result was saved)", lines
    # The saved review was applied, not judged again: one attempt for the first reply, then the
    # round (scripted replies 2 and 3: a wrong candidate, its repair).
    assert [a.note for a in final.attempts].count("first candidate (scripted reply 1)") == 1
    assert len(final.attempts) == 3, (final.stop_reason, lines)
    assert "round budget" in (final.stop_reason or ""), final.stop_reason


def test_killed_run_resumes_where_it_stopped(tmp_path: Path) -> None:
    db, out = tmp_path / "ck.sqlite", tmp_path / "out"
    code = RUNNER.format(fixtures=str(FIXTURES), path=PROBLEM.path, db=str(db), out=str(out), rounds=3)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env)
    seen = []
    deadline = time.time() + 240
    while time.time() < deadline:  # kill right after the first correct review was checkpointed
        line = proc.stdout.readline()
        seen.append(line)
        if line.startswith("reviewer: correct"):
            break
    proc.kill()
    proc.wait()
    assert any(s.startswith("reviewer: correct") for s in seen), seen
    assert (out / "solution.py").exists()  # the best was written the moment it appeared
    lines: list[str] = []
    final: GraphState = run(PROBLEM, settings([], 3, 1), "t-resume", db, out, say=lines.append)
    # The resumed thread kept its own settings (the script) and its history.
    assert final.attempts[0].outcome == "correct" and final.attempts[0].node == "generator"
    assert len(final.attempts) >= 4 and final.stop_reason, (final.stop_reason, lines)
    assert final.settings.script and final.best is not None

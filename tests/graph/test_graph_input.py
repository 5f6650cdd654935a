"""The served graph's input: the size is given once, in settings (problem.size mirrors it); the
older form with the size in both is accepted when they agree and refused in one line when not.
README's example input is a valid one, and `langgraph build` is kept from copying the venv."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from kernelskill.graph.build import build_graph
from kernelskill.state.graph_state import GraphState, RunSettings
from kernelskill.state.records import Problem
from pydantic import ValidationError

ROOT = Path(__file__).resolve().parents[2]
PROBLEM = {"name": "relu_scale", "path": "relu_scale.py",
           "source": (ROOT / "tests" / "fixtures" / "relu_scale.py").read_text()}


@pytest.mark.parametrize("problem_size, settings_size, want", [
    (None, "small", "small"),      # the one place
    ("small", "small", "small"),   # the older form, agreeing
    ("small", None, "small"),      # a problem record carrying its size, settings silent
    (None, None, "full"),          # the default
])
def test_the_size_is_taken_once(problem_size: str | None, settings_size: str | None, want: str) -> None:
    problem = {**PROBLEM, **({"size": problem_size} if problem_size else {})}
    settings = {"device": "cpu", **({"size": settings_size} if settings_size else {})}
    s = GraphState.model_validate({"problem": problem, "settings": settings})
    assert s.settings.size == s.problem.size == want
    typed = GraphState(problem=Problem(**problem), settings=RunSettings(**settings))  # the CLI's way
    assert typed.settings.size == typed.problem.size == want


def test_disagreeing_sizes_are_one_line_refusal() -> None:
    bad = {"problem": {**PROBLEM, "size": "full"}, "settings": {"device": "cpu", "size": "small"}}
    with pytest.raises(ValidationError) as e:
        GraphState.model_validate(bad)
    [error] = e.value.errors()
    msg = error["msg"]
    assert "\n" not in msg and "problem.size 'full' disagrees with settings.size 'small'" in msg
    with pytest.raises(ValidationError):  # the compiled graph refuses it before any node runs
        build_graph().invoke(bad)


def test_the_readme_example_input_is_valid(monkeypatch: pytest.MonkeyPatch) -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## The served graph's input", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    seen: list[GraphState] = []

    class Client:  # langgraph_sdk's sync client, as far as the example uses it
        def __init__(self) -> None:
            self.threads = types.SimpleNamespace(create=lambda: {"thread_id": "t"})
            self.runs = types.SimpleNamespace(wait=self.wait)

        def wait(self, thread_id: str, graph: str, input: dict[str, Any]) -> dict[str, Any]:
            assert graph == "kernelskill"  # langgraph.json's name
            seen.append(GraphState.model_validate(input))
            return seen[-1].model_dump()

    monkeypatch.setitem(sys.modules, "langgraph_sdk",
                        types.SimpleNamespace(get_sync_client=lambda url: Client()))
    monkeypatch.chdir(ROOT)
    exec(compile(code, "README.md", "exec"), {})
    [state] = seen
    assert state.problem.name == "11_gelu" and state.settings.size == state.problem.size == "small"
    assert "class Model" in state.problem.source and state.started_at > 0


def test_dockerignore_keeps_the_venv_and_runs_out_of_the_image() -> None:
    lines = {ln.strip().rstrip("/") for ln in (ROOT / ".dockerignore").read_text().splitlines()}
    assert {".venv", "runs", ".git", "**/__pycache__"} <= lines

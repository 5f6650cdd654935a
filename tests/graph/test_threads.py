"""A stored thread read without building the graph: what a checkpoint holds, and no torch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kernelskill.graph.threads import checkpoint_state, serializer, stored_state
from kernelskill.state.graph_state import GraphState, RunSettings
from kernelskill.state.records import Problem

STATE = GraphState(problem=Problem(name="p", path="p.py", source="x = 1"), settings=RunSettings(device="cpu"))


def test_a_checkpoint_holds_its_fields_or_before_the_first_step_only_its_input() -> None:
    fields = STATE.model_dump()
    assert checkpoint_state({**fields, "branch:to:reviewer": None}) == STATE  # its own channels skipped
    assert checkpoint_state({"__start__": STATE}) == STATE
    assert checkpoint_state({"__start__": fields}) == STATE
    assert checkpoint_state({}) is None


def test_no_database_no_thread_and_nothing_created(tmp_path: Path) -> None:
    assert stored_state(tmp_path / "none.sqlite", "t") is None
    assert list(tmp_path.iterdir()) == []


def test_reading_a_thread_imports_no_torch(tmp_path: Path) -> None:
    """A real checkpoint (written here, where torch is loaded) read back in a fresh process."""
    import sqlite3

    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.sqlite import SqliteSaver

    db = tmp_path / "threads.sqlite"
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"problem": STATE.problem, "settings": STATE.settings}
    with sqlite3.connect(str(db), check_same_thread=False) as conn:
        SqliteSaver(conn, serde=serializer()).put({"configurable": {"thread_id": "t", "checkpoint_ns": ""}},
                                                  checkpoint, {}, {})
    code = ("import sys; from pathlib import Path; from kernelskill.graph.threads import stored_state; "
            f"s = stored_state(Path({str(db)!r}), 't'); print(s.problem.name, 'torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "p False", (done.stdout, done.stderr)

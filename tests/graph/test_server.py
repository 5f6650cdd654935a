"""The served graph: `langgraph dev` (in-memory server) on loopback, driven through langgraph-sdk.

The same langgraph.json graph the CLI runs; a thread runs a small CPU problem to the end with
the scripted author and the final state is read back over HTTP.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
sys.path.insert(0, str(FIXTURES))
from candidates import good, syntax_error  # noqa: E402
from langgraph_dev import langgraph_dev  # noqa: E402


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    with langgraph_dev(tmp_path / "cache", tmp_path / "server.log") as url:
        yield url


def test_served_graph_runs_a_thread_to_the_end(server: str) -> None:
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=server)
    assistants = client.assistants.search(graph_id="kernelskill")
    assert assistants, "the kernelskill graph is not served"
    thread = client.threads.create()
    problem = (FIXTURES / "relu_scale.py").read_text()
    state_in = {
        "problem": {"name": "relu_scale", "path": "relu_scale.py", "source": problem, "size": "small"},
        "settings": {"device": "cpu", "size": "small", "author": "scripted", "rounds": 1, "repairs": 1,
                     "trials": 2, "baselines": False, "script": [syntax_error(), good(1024)]},
        "started_at": time.time(),
    }
    final = client.runs.wait(thread["thread_id"], "kernelskill", input=state_in)
    assert final["best"] is not None, final.get("stop_reason")
    outcomes = [a["outcome"] for a in final["attempts"]]
    assert outcomes[:2] == ["compile-error", "correct"]
    assert final["stop_reason"]
    # The checkpointed thread state is readable over HTTP too.
    state = client.threads.get_state(thread["thread_id"])
    assert state["values"]["best_verdict"]["correct"] is True

"""`kernelskill bench --server URL`: each problem runs as a thread on `langgraph dev` (loopback),
driven through langgraph-sdk; the bench writes the same files as an in-process bench, and a
resumed bench finds the finished server thread again instead of running it twice."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROBLEM = ROOT / "tests" / "fixtures" / "relu_scale.py"
sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
from langgraph_dev import langgraph_dev  # noqa: E402


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    with langgraph_dev(tmp_path / "server-cache", tmp_path / "server.log") as url:
        yield url


def _bench(*args: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp / "client-cache")}
    return subprocess.run([sys.executable, "-m", "kernelskill.cli", "bench", *args], env=env, text=True,
                          capture_output=True, timeout=600)


@pytest.mark.slow
def test_bench_runs_problems_as_server_threads(server: str, tmp_path: Path) -> None:
    from langgraph_sdk import get_sync_client

    out, cfg = tmp_path / "out", tmp_path / "cfg.toml"
    cfg.write_text("[run]\ntrials = 2\n")
    done = _bench(str(PROBLEM), "--server", server, "--device", "cpu", "--size", "small", "--rounds", "1",
                  "--out", str(out), "--config", str(cfg), tmp=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    (row,) = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert row["problem"] == "unknown/relu_scale" and row["correct"] is True and row["error"] is None
    assert "class ModelNew" in (out / row["solution"]).read_text()
    # The row names the server thread; its checkpointed state is the one the bench reported.
    state = get_sync_client(url=server).threads.get_state(row["thread_id"])["values"]
    assert state["best_verdict"]["correct"] is True and len(state["attempts"]) == row["attempts"]
    assert "started run" in (out / "unknown" / "relu_scale" / "log.txt").read_text()
    # Lose the result (as a crash before the row was written would): the resumed bench finds the
    # finished thread on the server and only reads it back.
    (out / "results.jsonl").unlink()
    again = _bench("--resume", "--out", str(out), tmp=tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    (row2,) = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert row2["thread_id"] == row["thread_id"] and row2["attempts"] == row["attempts"]
    assert "already finished" in (out / "unknown" / "relu_scale" / "log.txt").read_text()

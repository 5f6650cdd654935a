"""Threads in PostgreSQL, against a real server on loopback (tests/fixtures/postgres_server.py):
a run killed in one process resumes from another through the database; a SQLite history is
copied whole by `kernelskill state migrate`; the served graph (`langgraph dev` with
langgraph.postgres.json) runs a small CPU problem with its checkpoints in the database.
Skipped, with the reason, where no server can start."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kernelskill.graph.runner import run
from kernelskill.graph.threads import stored_state
from kernelskill.state.graph_state import RunSettings
from kernelskill.state.records import Problem

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
sys.path.insert(0, str(FIXTURES))
import postgres_server  # noqa: E402
from candidates import good  # noqa: E402
from langgraph_dev import langgraph_dev  # noqa: E402

postgres, pg_url = postgres_server.postgres, postgres_server.pg_url  # the fixtures

PROBLEM = Problem(name="relu_scale", path=str(FIXTURES / "relu_scale.py"),
                  source=(FIXTURES / "relu_scale.py").read_text(), size="small")
RUNNER = """
import sys
from pathlib import Path
sys.path.insert(0, {fixtures!r})
from candidates import good
from kernelskill.graph.runner import run
from kernelskill.state.graph_state import RunSettings
from kernelskill.state.records import Problem
p = Problem(name="relu_scale", path={path!r}, source=Path({path!r}).read_text(), size="small")
s = RunSettings(device="cpu", size="small", author="scripted", variants=1, trials=2, baselines=False,
                rounds=1, repairs=1, script=[good(1024), good(256)])
run(p, s, {thread!r}, {db!r}, Path({out!r}), say=lambda line: print(line, flush=True))
"""


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    from kernelskill.nodes.runtime import set_config
    from kernelskill.state.config import KernelSkillConfig

    set_config(KernelSkillConfig())


def _settings() -> RunSettings:
    return RunSettings(device="cpu", size="small", author="scripted", variants=1, script=[], rounds=2,
                       repairs=1, trials=2, baselines=False, eval_timeout_s=120)


def test_a_thread_killed_on_one_host_resumes_on_another(pg_url: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    code = RUNNER.format(fixtures=str(FIXTURES), path=PROBLEM.path, thread="t-pg", db=pg_url, out=str(out))
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache-a")}
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env)
    seen = []
    deadline = time.time() + 240
    while time.time() < deadline:  # killed right after its first correct review was checkpointed
        line = proc.stdout.readline()
        seen.append(line)
        if line.startswith("reviewer: correct") or not line:
            break
    proc.kill()
    proc.wait()
    assert any(s.startswith("reviewer: correct") for s in seen), seen
    # The database alone tells a second host where the thread stands, with its own options.
    stored = stored_state(pg_url, "t-pg")
    assert stored is not None and stored.settings.script and stored.attempts[0].outcome == "correct"
    lines: list[str] = []
    final = run(PROBLEM, _settings(), "t-pg", pg_url, tmp_path / "out-b", say=lines.append)
    assert lines[0].startswith("resuming thread t-pg at "), lines
    assert [a.note for a in final.attempts].count("first candidate (scripted reply 1)") == 1
    assert final.attempts[0].outcome == "correct" and len(final.attempts) == 2, lines
    assert final.best is not None and final.stop_reason
    assert (tmp_path / "out-b" / "solution.py").exists()


def test_migrate_copies_every_thread_checkpoint_and_write(pg_url: str, tmp_path: Path) -> None:
    from kernelskill.cli.main import main
    from kernelskill.graph.checkpointer import open_checkpointer

    db = tmp_path / "threads.sqlite"
    settings = _settings().model_copy(update={"script": [good(1024)], "rounds": 1})
    run(PROBLEM, settings, "done", db, tmp_path / "o1", say=lambda _: None)
    run(PROBLEM, settings.model_copy(update={"script": [good(512)]}), "other", db, tmp_path / "o2",
        say=lambda _: None)

    def history(where: object) -> list[tuple]:
        with open_checkpointer(where, setup=False) as saver:
            return sorted((t.config["configurable"]["thread_id"], t.checkpoint["id"],
                           (t.parent_config or {}).get("configurable", {}).get("checkpoint_id"),
                           t.metadata.get("step"), len(t.pending_writes or []),
                           sorted(t.checkpoint["channel_values"])) for t in saver.list(None))

    assert main(["state", "migrate", str(db), pg_url]) == 0
    before = history(db)
    assert len({h[0] for h in before}) == 2 and history(pg_url) == before
    assert main(["state", "migrate", f"sqlite://{db}", pg_url]) == 0  # again: nothing doubles
    assert history(pg_url) == before
    from kernelskill.graph.migrate import migrate

    again = migrate(db, pg_url)  # and it says so
    assert again.already == again.checkpoints == len(before)
    # The copied thread is the same thread: finished, with its state.
    lines: list[str] = []
    final = run(PROBLEM, _settings(), "done", pg_url, tmp_path / "o3", say=lines.append)
    assert lines == ["thread done already finished; writing its outputs"], lines
    assert final.attempts == stored_state(db, "done").attempts


def test_the_served_graph_checkpoints_in_postgres(pg_url: str, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import psycopg
    from langgraph_sdk import get_sync_client

    monkeypatch.setenv("POSTGRES_URI", pg_url)
    with langgraph_dev(tmp_path / "cache", tmp_path / "server.log", config="langgraph.postgres.json") as url:
        client = get_sync_client(url=url)
        thread = client.threads.create()
        settings = _settings().model_copy(update={"script": [good(1024)], "rounds": 1})
        state_in = {"problem": PROBLEM.model_dump(), "settings": settings.model_dump(),
                    "started_at": time.time()}
        final = client.runs.wait(thread["thread_id"], "kernelskill", input=state_in)
        assert final["best"] is not None and final["stop_reason"], final.get("stop_reason")
        assert client.threads.get_state(thread["thread_id"])["values"]["best_verdict"]["correct"] is True
    # The server is gone; its thread is in the database, readable by the CLI's own reader.
    with psycopg.connect(pg_url) as conn:
        n = conn.execute("SELECT count(*) FROM checkpoints WHERE thread_id = %s",
                         (thread["thread_id"],)).fetchone()[0]
    assert n >= 3
    with psycopg.connect(pg_url) as conn:  # the planner read the experience statistics there too
        assert conn.execute("SELECT to_regclass('kernelskill_attempts')").fetchone()[0] is not None
    stored = stored_state(pg_url, thread["thread_id"])
    assert stored is not None and stored.best is not None

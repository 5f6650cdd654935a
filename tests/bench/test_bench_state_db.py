"""`kernelskill bench --state-db postgresql://...` on the CPU, against a real PostgreSQL server:
the problem's thread checkpoints in the database (no SQLite file in the bench folder), its
attempts reach the shared statistics table, bench.json keeps no password, and `--resume` from
another process finds the problem done and runs nothing again. Skipped, with the reason, where
no server can start."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
sys.path.insert(0, str(FIXTURES))
import postgres_server  # noqa: E402

postgres, pg_url = postgres_server.postgres, postgres_server.pg_url  # the fixtures
ROOT = Path(__file__).resolve().parents[2]
PROBLEM = ROOT / "problems" / "level1" / "12_silu.py"


def _bench(out: Path, url: str, *more: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kernelskill.cli", "bench", str(PROBLEM), "--device", "cpu",
                           "--rounds", "1", "--out", str(out), "--state-db", url, *more],
                          capture_output=True, text=True, timeout=900)


def test_a_bench_keeps_its_threads_and_statistics_in_the_team_database(pg_url: str, tmp_path: Path) -> None:
    import psycopg
    from kernelskill.skill_index.stats_sql import TABLE

    out = tmp_path / "bench"
    first = _bench(out, pg_url)
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
    rows = [json.loads(ln) for ln in (out / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 1 and rows[0]["correct"], rows
    assert not list(out.rglob("*.sqlite")), list(out.rglob("*.sqlite"))  # checkpoints went to the server
    saved = json.loads((out / "bench.json").read_text())
    assert "state_db" in json.dumps(saved) and "@" in json.dumps(saved)
    assert postgres_server.PASSWORD not in (out / "bench.json").read_text()
    with psycopg.connect(pg_url) as conn:
        threads = conn.execute("SELECT count(DISTINCT thread_id) FROM checkpoints").fetchone()[0]
        tries = conn.execute(f"SELECT count(*) FROM {TABLE}").fetchone()[0]
    assert threads == 1 and tries >= 1

    again = _bench(out, pg_url, "--resume")  # another process, as another host would be
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    assert len((out / "results.jsonl").read_text().splitlines()) == 1  # nothing ran twice
    with psycopg.connect(pg_url) as conn:
        assert conn.execute(f"SELECT count(*) FROM {TABLE}").fetchone()[0] == tries

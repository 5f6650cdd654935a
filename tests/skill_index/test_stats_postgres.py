"""Experience statistics in PostgreSQL (skill_index/stats_sql.py), against a real server: the same
counts as the JSON table for the same attempts, and concurrent writers in separate processes lose
nothing. Skipped, with the reason, where no server can start."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from kernelskill.skill_index.stats import ExperienceStats
from kernelskill.skill_index.stats_sql import SqlExperienceStats, open_stats

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
sys.path.insert(0, str(FIXTURES))
import postgres_server  # noqa: E402

postgres, pg_url = postgres_server.postgres, postgres_server.pg_url  # the fixtures

ATTEMPTS = [  # skill, structure, device, speedup, correct, variant
    ("fuse", "elementwise", "H200", 1.5, True, '{"BLOCK":1024}'),
    ("fuse", "elementwise", "H200", 0.8, True, '{"BLOCK":1024}'),
    ("fuse", "elementwise", "H200", None, False, '{"BLOCK":256}'),
    ("fuse", "row-reduction", "H100", 2.0, True, ""),
    ("fuse", "elementwise", "cpu", 3.0, True, '{"BLOCK":1024}'),  # CPU: a try, never a gain
    ("tile", "gemm", "H200", 1.1, True, "{}"),
]


def test_the_same_counts_as_the_json_table(pg_url: str, tmp_path: Path) -> None:
    sql, js = open_stats(tmp_path / "unused.json", pg_url), ExperienceStats(tmp_path / "stats.json")
    assert isinstance(sql, SqlExperienceStats)
    for skill, structure, gpu, speedup, correct, variant in ATTEMPTS:
        got = sql.record_outcome(skill, structure, gpu, speedup, correct, variant)
        want = js.record_outcome(skill, structure, gpu, speedup, correct, variant)
        assert _same(got, want)
    assert len(sql.records()) == len(js.records()) == 5
    for a, b in zip(sql.records(), js.records(), strict=True):
        assert _same(a, b)
    for args in [("fuse",), ("fuse", ["elementwise"], "H200"), ("fuse", [], "H200", '{"BLOCK":1024}'),
                 ("tile", ["gemm"]), ("nothing",)]:
        assert sql.experience(*args) == js.experience(*args), args
    exp = sql.experience("fuse", ["elementwise"], "H200")
    assert (exp.tries, exp.wins, exp.untimed) == (4, 1, 1)
    assert exp.mean_gain == pytest.approx((1.5 * 0.8) ** 0.5)


def _same(a: object, b: object) -> bool:
    da, db = a.model_dump(), b.model_dump()  # type: ignore[attr-defined]
    return da.pop("log_gain_sum") == pytest.approx(db.pop("log_gain_sum")) and da == db


WRITER = """
import sys
from kernelskill.skill_index.stats_sql import SqlExperienceStats, open_stats
stats = SqlExperienceStats(sys.argv[1])
for i in range({n}):
    stats.record_outcome("fuse", "elementwise", "H200", 1.25 if i % 2 else 0.5, True, sys.argv[2])
"""


def test_concurrent_writers_lose_nothing(pg_url: str) -> None:
    SqlExperienceStats(pg_url).setup()
    n = 40
    procs = [subprocess.Popen([sys.executable, "-c", WRITER.format(n=n), pg_url, variant])
             for variant in ("a", "a", "b")]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    records = {r.variant: r for r in SqlExperienceStats(pg_url).records()}
    assert records["a"].tries == 2 * n and records["b"].tries == n
    assert records["a"].wins == n and records["a"].gains == 2 * n
    assert records["a"].mean_gain == pytest.approx((1.25 * 0.5) ** 0.5)


def test_skills_stats_reads_the_team_database(pg_url: str, tmp_path: Path) -> None:
    """`kernelskill skills stats --state-db URL` shows every host's attempts from the database, not
    the local JSON table; a database that cannot be reached is one line."""
    sql = SqlExperienceStats(pg_url)
    for skill, structure, gpu, speedup, correct, variant in ATTEMPTS:
        sql.record_outcome(skill, structure, gpu, speedup, correct, variant)
    local = tmp_path / "stats.json"
    ExperienceStats(local).record_outcome("only-here", "gemm", "H100", 2.0, True)

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "kernelskill.cli", "skills", *args,
                               "--stats-path", str(local)], capture_output=True, text=True, timeout=300)

    team = cli("stats", "--json", "--state-db", pg_url)
    assert team.returncode == 0, team.stderr
    rows = {(r["skill_id"], r["structure"], r["gpu"], r["variant"]): r["tries"]
            for r in json.loads(team.stdout)}
    assert rows[("fuse", "elementwise", "H200", '{"BLOCK":1024}')] == 2 and len(rows) == 5
    assert not any(k[0] == "only-here" for k in rows)
    mine = cli("stats", "--json")
    assert [r["skill_id"] for r in json.loads(mine.stdout)] == ["only-here"]
    gone = cli("stats", "--state-db", "postgresql://nobody@127.0.0.1:1/none")
    assert gone.returncode == 2 and len(gone.stderr.strip().splitlines()) == 1, gone.stderr

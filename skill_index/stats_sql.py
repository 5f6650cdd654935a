"""Experience statistics in the team's PostgreSQL database (--state-db postgresql://...).

Every finished attempt is one appended row; the per-(skill, structure, device, variant) counts are
a GROUP BY over them. Appending never conflicts, so any number of hosts and workers record at once
and no update is lost (a read-modify-write of a shared counter would need a lock to be safe). The
counting rules are stats.py's, written in SQL: every attempt is a try; on a GPU a correct attempt
with a speedup is a gain (ln summed for the geometric mean) and a win above 1.0; CPU rows
(interpreter timings) are tries only. The public interface is stats.ExperienceStats's, which this
class extends: `experience()` sums the aggregated rows exactly as the JSON table does.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

from ..state.state_db import StateDB, StateDBError, connect, describe_error, parse_state_db
from .stats import CPU, ExperienceStats, StatRecord

TABLE = "kernelskill_attempts"
SCHEMA = [f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    id BIGSERIAL PRIMARY KEY,
    skill_id TEXT NOT NULL,
    structure TEXT NOT NULL,
    gpu TEXT NOT NULL,
    variant TEXT NOT NULL DEFAULT '',
    correct BOOLEAN NOT NULL,
    speedup DOUBLE PRECISION,
    host TEXT,
    recorded_at TIMESTAMPTZ NOT NULL DEFAULT now()
)""", f"CREATE INDEX IF NOT EXISTS {TABLE}_skill ON {TABLE} (skill_id)"]
GAIN = f"gpu <> '{CPU}' AND correct AND speedup > 0"
AGGREGATE = f"""
SELECT skill_id, structure, gpu, variant, count(*) AS tries,
       count(*) FILTER (WHERE {GAIN} AND speedup > 1.0) AS wins,
       count(*) FILTER (WHERE {GAIN}) AS gains,
       coalesce(sum(ln(speedup)) FILTER (WHERE {GAIN}), 0.0) AS log_gain_sum
FROM {TABLE} {{where}}
GROUP BY skill_id, structure, gpu, variant
ORDER BY skill_id, structure, gpu, variant
"""


def open_stats(path: Path, state_db: str | None = None) -> ExperienceStats:
    """The table a configuration names: the JSON file at `path`, or, when the state database is
    PostgreSQL, its append-only attempts table shared by every host."""
    if state_db and parse_state_db(state_db).is_postgres:
        return SqlExperienceStats(state_db)
    return ExperienceStats(path)


def setup_stats(db: StateDB) -> None:
    """Create the attempts table (idempotent); nothing for SQLite, whose statistics are a JSON file."""
    if db.is_postgres:
        SqlExperienceStats(db.url).setup()


class SqlExperienceStats(ExperienceStats):
    """The PostgreSQL-backed table. Reads are cached (as the JSON table's are) until this process
    records an attempt; the table is created on first use."""

    def __init__(self, url: str | StateDB) -> None:
        self.db = parse_state_db(url)
        if not self.db.is_postgres:
            raise StateDBError(f"SQL statistics need a postgresql:// URL, not {self.db.redacted()}")
        self.path = None  # type: ignore[assignment]  # no file: `db` says where they live
        self._data = None
        self._records: list[StatRecord] | None = None
        self._ready = False

    def _query(self, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        import psycopg

        conn = connect(self.db)
        try:
            if not self._ready:
                # Under a lock: two hosts' first CREATE TABLE IF NOT EXISTS can otherwise collide.
                with conn.transaction():
                    conn.execute(f"SELECT pg_advisory_xact_lock(hashtext('{TABLE}'))")
                    for statement in SCHEMA:
                        conn.execute(statement)
                self._ready = True
            cur = conn.execute(sql, params)
            return cur.fetchall() if cur.description else []
        except psycopg.Error as e:
            raise StateDBError(describe_error(self.db.url, e)) from None
        finally:
            conn.close()

    def setup(self) -> None:
        self._query("SELECT 1")

    def records(self) -> list[StatRecord]:
        if self._records is None:
            self._records = [StatRecord(**row) for row in self._query(AGGREGATE.format(where=""))]
        return list(self._records)

    def record_outcome(self, skill_id: str, structure: str, gpu: str, speedup: float | None,
                       correct: bool, variant: str = "") -> StatRecord:
        """Append one finished attempt; return its (skill, structure, device, variant) counts with
        every host's attempts in them."""
        key = (skill_id, structure, gpu, variant)
        self._query(f"INSERT INTO {TABLE} (skill_id, structure, gpu, variant, correct, speedup, host) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s)", (*key, correct, speedup, socket.gethostname()))
        self._records = None
        where = "WHERE skill_id = %s AND structure = %s AND gpu = %s AND variant = %s"
        return StatRecord(**self._query(AGGREGATE.format(where=where), key)[0])

"""The one place a checkpointer is made, for the CLI, the bench workers and the served graph:
SQLite (langgraph-checkpoint-sqlite) for a file, PostgreSQL (langgraph-checkpoint-postgres) for a
team's database. Both use the same serializer (serde.py), so a thread reads the same
wherever it is stored, and `state migrate` can copy one into the other.

PostgreSQL's tables are created on first use (the saver's own idempotent `setup()`), so a fresh
database needs no step by hand; a user without CREATE rights gets one line naming
`kernelskill state setup URL` for the owner to run.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from ..state.state_db import CONNECT_KWARGS, StateDB, StateDBError, connect, describe_error, parse_state_db
from .serde import serializer


@contextlib.contextmanager
def open_checkpointer(where: str | Path | StateDB, setup: bool = True) -> Iterator[Any]:
    """A checkpoint saver on `where` for the block (closed after). `setup`: create the SQLite
    file's folder, or PostgreSQL's tables, when missing."""
    db = parse_state_db(where)
    if not db.is_postgres:
        assert db.path is not None
        from langgraph.checkpoint.sqlite import SqliteSaver

        if setup:
            db.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(db.path), check_same_thread=False)
        try:
            yield SqliteSaver(conn, serde=serializer())
        finally:
            conn.close()
        return
    from langgraph.checkpoint.postgres import PostgresSaver

    conn = connect(db)
    try:
        saver = PostgresSaver(conn, serde=serializer())
        if setup:
            setup_tables(saver, db)
        yield saver
    finally:
        conn.close()


def setup_tables(saver: Any, db: StateDB) -> None:
    """The saver's schema migrations (idempotent), with a failure said in one line."""
    import psycopg

    try:
        saver.setup()
    except psycopg.Error as e:
        raise StateDBError(describe_error(db.url, e)) from None


def exists(where: str | Path | StateDB) -> bool:
    """Does `where` hold a checkpoint store already (nothing is created to find out)?"""
    db = parse_state_db(where)
    if not db.is_postgres:
        return db.path is not None and db.path.exists()
    conn = connect(db)
    try:
        row = conn.execute("SELECT to_regclass('checkpoints') AS t").fetchone()
        return row is not None and row["t"] is not None
    finally:
        conn.close()


@contextlib.asynccontextmanager
async def open_async_postgres(url: str) -> AsyncIterator[Any]:
    """An async PostgreSQL saver over a connection pool, tables set up: what the served graph's
    server enters once (langgraph.postgres.json's `checkpointer.path`)."""
    db = parse_state_db(url)
    if not db.is_postgres:
        raise StateDBError(f"the served checkpointer needs a postgresql:// URL, not {db.redacted()}")
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg.rows import dict_row
    from psycopg_pool import AsyncConnectionPool

    pool = AsyncConnectionPool(db.url, min_size=1, max_size=8, open=False,
                               kwargs={"row_factory": dict_row, **CONNECT_KWARGS})
    try:
        await pool.open(wait=True, timeout=15)
    except Exception as e:  # psycopg_pool.PoolTimeout hides the server's answer: ask it once directly
        with contextlib.suppress(StateDBError):
            connect(db).close()
        raise StateDBError(describe_error(db.url, e)) from None
    try:
        saver = AsyncPostgresSaver(pool, serde=serializer())
        await saver.setup()
        yield saver
    finally:
        await pool.close()

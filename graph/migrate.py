"""Copying a checkpoint history from one store into another (SQLite into a team's PostgreSQL):
every thread, every checkpoint of every namespace with its metadata and parent link, and every
pending write, so a copied thread resumes exactly where it stood.

Through the savers' own API, not table to table: the two schemas differ (PostgreSQL keeps channel
values in a blob table keyed by version), and the savers know how. Each checkpoint is written
with all its channels as "new", so every value it refers to is stored. Writing is idempotent
(the savers upsert), so a migration cut short is simply run again.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path
from typing import Any

from ..state.state_db import StateDB
from .checkpointer import exists, open_checkpointer


@dataclass(frozen=True)
class Copied:
    threads: int
    checkpoints: int
    writes: int
    already: int = 0
    """Checkpoints the target held before (a second migration finds them all there)."""


def migrate(source: str | Path | StateDB, target: str | Path | StateDB) -> Copied:
    """Copy everything in `source` into `target` (created or set up when missing)."""
    if not exists(source):
        raise FileNotFoundError(f"no checkpoint store at {source}")
    with open_checkpointer(source, setup=False) as src, open_checkpointer(target) as dst:
        # Oldest first, so that each checkpoint's parent is already there when it arrives.
        saved = sorted(src.list(None), key=lambda t: (t.config["configurable"]["thread_id"],
                                                      t.config["configurable"].get("checkpoint_ns", ""),
                                                      t.checkpoint["id"]))
        paths, writes, already = task_paths(src), 0, 0
        for item in saved:
            already += dst.get_tuple(item.config) is not None
            copy_checkpoint(dst, item, paths)
            writes += len(item.pending_writes or [])
        threads = {t.config["configurable"]["thread_id"] for t in saved}
        return Copied(len(threads), len(saved), writes, already)


def task_paths(src: Any) -> dict[tuple[str, str, str, str], str]:
    """(thread, namespace, checkpoint, task) -> the task's path, which LangGraph orders pending
    writes by but a CheckpointTuple leaves out; read from a SQLite store's table ({} elsewhere)."""
    conn = getattr(src, "conn", None)
    if not isinstance(conn, sqlite3.Connection):
        return {}
    try:
        rows = conn.execute("SELECT DISTINCT thread_id, checkpoint_ns, checkpoint_id, task_id, task_path "
                            "FROM writes").fetchall()
    except sqlite3.OperationalError:  # a store written before task paths were kept
        return {}
    return {(str(t), str(ns), str(c), str(task)): path or "" for t, ns, c, task, path in rows}


def copy_checkpoint(dst: Any, item: Any, paths: dict[tuple[str, str, str, str], str]) -> None:
    """One CheckpointTuple into `dst`: the checkpoint under its parent, then its pending writes
    per task in their stored order, with the task's path (`paths`)."""
    conf = item.config["configurable"]
    parent = (item.parent_config or {}).get("configurable", {}).get("checkpoint_id")
    into = {"configurable": {"thread_id": conf["thread_id"], "checkpoint_ns": conf.get("checkpoint_ns", ""),
                             **({"checkpoint_id": parent} if parent else {})}}
    stored = dst.put(into, item.checkpoint, item.metadata, dict(item.checkpoint.get("channel_versions", {})))
    for task_id, group in groupby(item.pending_writes or [], key=lambda w: w[0]):
        key = (conf["thread_id"], conf.get("checkpoint_ns", ""), item.checkpoint["id"], task_id)
        dst.put_writes(stored, [(channel, value) for _, channel, value in group], task_id, paths.get(key, ""))

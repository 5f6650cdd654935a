"""The served graph's database: the PostgreSQL the LangGraph server is given.

`langgraph up` starts the server with POSTGRES_URI naming the image's PostgreSQL, where the server
keeps its threads with its own checkpointer (LangGraph's server also reads DATABASE_URI). The
graph's experience statistics go to that database too (app.py), so every served thread teaches
the skill ranking shared with the CLI and the bench hosts on it. Under `langgraph dev`, which
checkpoints in memory, langgraph.postgres.json's `checkpointer.path` names `checkpointer` below
(through app.py), and the threads go to the same database.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from ..nodes.runtime import config, set_config
from ..state.state_db import StateDBError
from .checkpointer import open_async_postgres


def server_database() -> str | None:
    """The server's PostgreSQL URL (None: it has none). `langgraph dev` sets DATABASE_URI to
    ':memory:' for its in-memory runtime, so only a postgres URL counts."""
    for name in ("POSTGRES_URI", "DATABASE_URI"):
        url = os.environ.get(name, "")
        if url.startswith(("postgresql://", "postgres://")):
            return url
    return None


def use_server_database() -> None:
    """Point the experience statistics at the server's database (nothing to do without one)."""
    url = server_database()
    if url:
        set_config(config().override("paths", state_db=url))


@asynccontextmanager
async def checkpointer() -> AsyncIterator[Any]:
    """The served graph's checkpointer under `langgraph dev`: the server's PostgreSQL."""
    url = server_database()
    if url is None:
        raise StateDBError("langgraph.postgres.json checkpoints in PostgreSQL: start the server with "
                           "POSTGRES_URI=postgresql://USER@HOST:PORT/DB")
    async with open_async_postgres(url) as saver:
        yield saver

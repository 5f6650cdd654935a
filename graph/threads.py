"""Reading a stored thread without building the graph: the checkpoint serializer, the thread's
problem and settings read straight from the checkpoints (SQLite or PostgreSQL), and whether it
has finished.

Why not `graph.get_state`: building the graph imports every node, and with them torch and Triton
(3-5 s), only to refuse a changed option in one line or to see that a thread exists. This module
imports LangGraph's checkpointer and our state records only (~0.5 s).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..state.graph_state import GraphState
from .serde import STATE_TYPES, serializer  # noqa: F401 - where callers have always found them


def checkpoint_state(channel_values: dict[str, Any]) -> GraphState | None:
    """Pure: the state a checkpoint's channels hold; a thread checkpointed before its first step
    holds only its input (LangGraph's `__start__` channel). None when neither is there."""
    fields = {k: v for k, v in channel_values.items() if k in GraphState.model_fields}
    if "problem" in fields and "settings" in fields:
        return GraphState.model_validate(fields)
    start = channel_values.get("__start__")
    if isinstance(start, GraphState):
        return start
    return GraphState.model_validate(start) if isinstance(start, dict) else None


def unfinished(next_nodes: Sequence[str], task_names: Sequence[str]) -> str | None:
    """Pure: where a stored thread resumes, or None when it is finished. `next` alone does not
    say: a node whose result was saved just before a crash (a pending write of the last step) is
    left out of `next`, yet the step never advanced; only a checkpoint with no task is the end."""
    if next_nodes:
        return ", ".join(next_nodes)
    return f"{', '.join(task_names)} (its result was saved)" if task_names else None


def stored_state(checkpoints: Path | str, thread_id: str) -> GraphState | None:
    """The thread's state at its last checkpoint in `checkpoints` (a SQLite file or a state-db URL),
    or None when it does not exist (nothing is created: a command that ends up refusing its input
    leaves no database behind). A node's result saved after that checkpoint (a crash between the
    two) is not applied here; the problem and settings, which never change, are what callers read.
    Resuming applies it (runner.run)."""
    from .checkpointer import exists, open_checkpointer  # it imports this module's serializer

    if not exists(checkpoints):
        return None
    with open_checkpointer(checkpoints, setup=False) as saver:
        saved = saver.get_tuple({"configurable": {"thread_id": thread_id}})
        return checkpoint_state(saved.checkpoint["channel_values"]) if saved else None

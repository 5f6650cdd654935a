"""The checkpoint serializer every store uses (SQLite, PostgreSQL, the served graph's): the same
bytes wherever a thread is kept, so `state migrate` copies threads unchanged."""

from __future__ import annotations

from typing import Any

# Types the checkpointer may rebuild from msgpack (everything our state holds).
STATE_TYPES = [("kernelskill.state.records", n) for n in
               ("Problem", "Candidate", "Attempt", "Profile", "KernelStat", "Plan")] + [
    ("kernelskill.state.graph_state", n) for n in ("GraphState", "Verdict", "RunSettings", "Pruning")] + [
    ("kernelskill.state.author_state", n) for n in ("AuthorState", "BuiltinConfig")]


def serializer() -> Any:
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    return JsonPlusSerializer(allowed_msgpack_modules=STATE_TYPES)

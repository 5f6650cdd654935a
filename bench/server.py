"""Run one bench problem as a thread on a LangGraph server (the langgraph.json graph) via langgraph-sdk.

The thread id is deterministic (a UUID derived from the bench's thread id), so a resumed bench
finds the thread again: a finished thread is only read back, a busy one (its run went on after
the bench died) is joined, an interrupted one continues from its last checkpoint. The outputs
(solution.py, report.json) are written locally from the final state, as an in-process run does.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..state.graph_state import GraphState, RunSettings
from ..state.records import Problem

GRAPH_ID = "kernelskill"  # the graph's name in langgraph.json
_NAMESPACE = uuid.UUID("6b1f1c1e-8f0a-4f57-9d3c-6b656e656c73")


def server_thread_id(thread_id: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, thread_id))


def _client(url: str) -> Any:
    import httpx
    from langgraph_sdk import get_sync_client

    # Reads may wait on a run for a long time: `join` is re-issued on a read timeout.
    return get_sync_client(url=url, timeout=httpx.Timeout(30.0, read=300.0))


def _join(client: Any, thread: str, run_id: str) -> dict[str, Any]:
    import httpx

    while True:
        try:
            return client.runs.join(thread, run_id)
        except httpx.ReadTimeout:
            continue


def run_on_server(url: str, problem: Problem, settings: RunSettings, thread_id: str, out_dir: Path,
                  say: Callable[[str], None]) -> GraphState:
    from ..graph.runner import write_outputs
    from ..graph.threads import unfinished

    client = _client(url)
    tid = server_thread_id(thread_id)
    client.threads.create(thread_id=tid, if_exists="do_nothing", metadata={"bench_thread": thread_id})
    thread = client.threads.get(tid)
    state = client.threads.get_state(tid)
    if thread.get("status") == "busy":
        running = [r for r in client.runs.list(tid, limit=5) if r["status"] in ("pending", "running")]
        if not running:
            raise RuntimeError(f"server thread {tid} is busy but has no pending or running run")
        run_id = running[0]["run_id"]
        say(f"server thread {tid}: joining run {run_id} that is still going")
    elif state.get("values") and unfinished(state.get("next") or [],
                                            [t["name"] for t in state.get("tasks") or []]) is None:
        say(f"server thread {tid} already finished; writing its outputs")
        run_id = None
    else:
        resume = bool(state.get("values"))
        payload = None if resume else {
            "problem": problem.model_dump(), "settings": settings.model_dump(), "started_at": time.time()}
        run = client.runs.create(tid, GRAPH_ID, input=payload, config={"recursion_limit": 500},
                                 metadata={"bench_thread": thread_id})
        run_id = run["run_id"]
        say(f"server thread {tid}: {'resumed' if resume else 'started'} run {run_id} on {url}")
    if run_id is not None:
        _join(client, tid, run_id)
        status = client.runs.get(tid, run_id)["status"]
        if status != "success":
            raise RuntimeError(f"server run {run_id} on thread {tid} ended with status {status!r}")
    values = client.threads.get_state(tid)["values"]
    final = GraphState.model_validate(values)
    path, is_ref = write_outputs(final, thread_id, out_dir)
    say(f"wrote {path}" + (" (the reference itself)" if is_ref else "") + f"; stop: {final.stop_reason}")
    return final

"""Running the graph from the command line: SQLite checkpoints, resume by thread id, progress,
and the best solution written to disk as soon as it appears (nothing lost on Ctrl-C or crash)."""

from __future__ import annotations

import contextlib
import json
import shlex
import sqlite3
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..eval.child import spare_judges
from ..nodes.finalize import solution_choice
from ..state.graph_state import GraphState, RunSettings
from ..state.records import Problem
from .build import build_graph
from .report import build_report, delivered_verdict, solution_text
from .threads import serializer, unfinished

Printer = Callable[[str], None]


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def describe(node: str, update: dict[str, Any]) -> str | None:
    """One progress line for a node's update (pure; None when there is nothing to say)."""
    if node in ("generator", "repairer"):
        c = update.get("candidate")
        if c is not None:
            return f"{node}: {c.note}"
        errors = [a.error for a in update.get("attempts", []) if a.error]
        return f"{node}: no candidate: {errors[0] if errors else 'the author produced nothing'}"
    if node == "reviewer":
        v = update["verdict"]
        repeat = [a.repeat_of for a in update.get("attempts", []) if a.repeat_of is not None]
        if repeat:
            return f"reviewer: repeat of attempt {repeat[0]} (same source), not evaluated again"
        took = [a.eval_s for a in update.get("attempts", []) if a.eval_s is not None]
        took_s = f" [evaluated in {took[0]:.0f} s]" if took else ""
        if not v.correct:
            return f"reviewer: rejected at {v.stage}: {(v.reason or '')[:160]}{took_s}"
        t = f"{v.runtime_ms:.4f} ms" if v.runtime_ms is not None else "?"
        tail = " (CPU timing)" if v.timing_is_cpu else (
            f", {v.speedup_vs_eager:.2f}x vs eager" if v.speedup_vs_eager else "")
        return f"reviewer: correct, {t}{tail}, {v.custom_kernels} custom kernel(s)" + (
            " -> new best" if "best" in update else "") + took_s
    if node == "profiler":
        p = update["profile"]
        return f"profiler: {p.bottleneck} ({p.source}); {', '.join(p.structures)}"
    if node == "planner":
        plan = update.get("plan")
        return f"planner: round {update.get('round')}: apply {plan.skill_id}" if plan else \
            f"planner: stop: {update.get('stop_reason')}"
    if node == "finalize":
        return f"finalize: {update.get('stop_reason') or 'done'}"
    return None


def resume_command(problem_path: str, thread: str, settings: RunSettings) -> str:
    """The complete resume command: the options live in the thread; the configuration file is
    named because it may move the checkpoint database the thread lives in."""
    cmd = f"kernelskill optimize {shlex.quote(problem_path)} --thread {shlex.quote(thread)}"
    return cmd + (f" --config {shlex.quote(settings.config)}" if settings.config else "")


def write_outputs(state: GraphState, thread_id: str, out_dir: Path) -> tuple[Path, bool]:
    out_dir.mkdir(parents=True, exist_ok=True)
    _, is_reference, _ = solution_choice(state)
    (out_dir / "solution.py").write_text(solution_text(state, thread_id))
    (out_dir / "report.json").write_text(json.dumps(build_report(state, thread_id), indent=1, default=str))
    return out_dir / "solution.py", is_reference


def _stream(graph: Any, payload: Any, config: dict, thread_id: str, out_dir: Path,
            say: Printer) -> None:
    """Run the graph from `payload` (None: resume), saying one line per node update."""
    best_hash = None
    # durability="sync": each step's checkpoint is on disk before the next step starts (LangGraph's
    # default writes it in the background, racing the next step): a crash loses at most the step
    # in flight, and `unfinished` resumes one whose result was already saved.
    for chunk in graph.stream(payload, config, stream_mode="updates", durability="sync"):
        for node, update in chunk.items():
            # Write a new best before saying anything: nothing is lost if killed now.
            if update and update.get("best") is not None and update["best"].hash != best_hash:
                best_hash = update["best"].hash
                state = GraphState.model_validate(graph.get_state(config).values)
                write_outputs(state, thread_id, out_dir)
            line = describe(node, update or {})
            if line:
                say(line)


def run(problem: Problem, settings: RunSettings, thread_id: str, checkpoints: Path, out_dir: Path,
        say: Printer = _stderr, resume_hint: str | None = None) -> GraphState:
    """Start or resume thread `thread_id`; returns the final state."""
    checkpoints.parent.mkdir(parents=True, exist_ok=True)
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(str(checkpoints), check_same_thread=False)
    try:
        graph = build_graph(SqliteSaver(conn, serde=serializer()))
        config = {"configurable": {"thread_id": thread_id}, "recursion_limit": 500}
        snapshot = graph.get_state(config)
        if snapshot.values:
            at = unfinished(snapshot.next, [t.name for t in snapshot.tasks])
            if at is None:
                say(f"thread {thread_id} already finished; writing its outputs")
                final = GraphState.model_validate(snapshot.values)
                write_outputs(final, thread_id, out_dir)
                return final
            say(f"resuming thread {thread_id} at {at}")
            payload: Any = None
        else:
            payload = GraphState(problem=problem, settings=settings, started_at=time.time())
            say(f"thread {thread_id}: optimizing {problem.name} on {settings.device} "
                f"({settings.size} sizes, author {settings.author}, {settings.rounds} rounds)")
        try:
            # On a GPU each evaluation leaves a judge starting up for the next one (eval/child.py).
            # Not on the CPU: there the spare's start-up takes a core from the author and the
            # evaluation it would speed up (a 2-core machine has nothing idle to lend it).
            spares = spare_judges() if settings.device == "cuda" else contextlib.nullcontext()
            with spares:
                _stream(graph, payload, config, thread_id, out_dir, say)
        except KeyboardInterrupt:
            stored = graph.get_state(config).values
            kept = RunSettings.model_validate(stored["settings"]) if stored else settings
            hint = resume_hint or resume_command(problem.path, thread_id, kept)
            say(f"interrupted: resume with `{hint}`")
            raise
        final = GraphState.model_validate(graph.get_state(config).values)
        path, is_ref = write_outputs(final, thread_id, out_dir)
        say(f"wrote {path}" + (" (the reference itself: nothing better was found)" if is_ref else "")
            + f" and {out_dir / 'report.json'}")
        delivered, _ = delivered_verdict(final)
        ratio = delivered.speedup_vs_eager if delivered is not None else None
        if ratio is not None and ratio < 1.0:  # never written silently
            say(f"warning: {path} measured {ratio:.2f}x eager, slower than the module it replaces"
                + (" (the reference itself: run-to-run noise)" if is_ref else ""))
        return final
    finally:
        conn.close()

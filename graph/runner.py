"""Running the graph from the command line: checkpoints (SQLite or PostgreSQL), resume by thread
id, progress, and the best solution written to disk as soon as it appears (nothing lost on Ctrl-C
or crash)."""

from __future__ import annotations

import contextlib
import json
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..eval.child import spare_judges
from ..nodes.finalize import solution_choice
from ..state.graph_state import GraphState, RunSettings
from ..state.output import plural, write_atomic
from ..state.records import Problem
from .build import build_graph
from .report import build_report, delivered_verdict, solution_text
from .threads import unfinished

Printer = Callable[[str], None]


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def describe(node: str, update: dict[str, Any], profile_reused: bool = False) -> str | None:
    """One progress line for a node's update (pure; None when there is nothing to say).
    `profile_reused`: the profiler handed back the profile it made earlier (the best is unchanged),
    so nothing was measured and no profiling cost is said."""
    if node in ("generator", "repairer"):
        c = update.get("candidate")
        errors = [a.error for a in update.get("attempts", []) if a.error]
        if c is not None:
            # A round's variants the author could not build, or that repeat other code, are not
            # judged: say how many and the first reason, so a short round is not a mystery.
            dropped = f" ({plural(len(errors), 'variant')} not judged: {errors[0][:120]})" if errors else ""
            return f"{node}: {c.note}{dropped}"
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
        return f"reviewer: correct, {t}{tail}, {plural(v.custom_kernels, 'custom kernel')}" + (
            " -> new best" if "best" in update else "") + took_s + variants_said(update.get("attempts", []))
    if node == "profiler":
        p = update["profile"]
        said = f"profiler: {p.bottleneck} ({p.source}); {', '.join(p.structures)}"
        return said + (" [best unchanged: its profile reused]" if profile_reused else profile_cost(p))
    if node == "planner":
        plan = update.get("plan")
        n = len(plan.all_variants()) if plan else 0
        return f"planner: round {update.get('round')}: apply {plan.skill_id}" + (
            f" ({n} variants)" if n > 1 else "") if plan else \
            f"planner: stop: {update.get('stop_reason')}"
    if node == "finalize":
        return f"finalize: {update.get('stop_reason') or 'done'}"
    return None


def profile_cost(p: Any) -> str:
    """' [profiled in 21 s: timeline 6, ncu 9]' for a profile a child measured; '' otherwise (pure)."""
    wall = p.seconds.get("wall")
    if wall is None:
        return ""
    parts = [f"{k} {p.seconds[k]:.0f}" for k in ("timeline", "ncu") if p.seconds.get(k) is not None]
    return f" [profiled in {wall:.0f} s" + (f": {', '.join(parts)}" if parts else "") + "]"


def variants_said(attempts: list[Any]) -> str:
    """'; variants: layout=contiguous 3.925 ms | default 4.039 ms' for a round that judged several
    variants (the verdict above is the one the graph goes on with; pure)."""
    if len(attempts) < 2:
        return ""
    cells = []
    for a in attempts:
        name = ", ".join(f"{k}={v}" for k, v in a.params.items()) or "default"
        ok = a.outcome == "correct" and a.runtime_ms is not None
        cells.append(f"{name} {a.runtime_ms:.3f} ms" if ok else f"{name} {a.outcome}")
    return "; variants: " + " | ".join(cells)


def interrupt_name(e: KeyboardInterrupt) -> str:
    """The signal that stopped the run: cli.main.interruptible raises KeyboardInterrupt('SIGTERM')
    for SIGTERM and SIGHUP; Ctrl-C raises it bare."""
    name = str(e.args[0]) if e.args else ""
    return name if name.startswith("SIG") else "SIGINT"


def resume_command(problem_path: str, thread: str, settings: RunSettings) -> str:
    """The complete resume command: the options live in the thread; the configuration file is
    named because it may move the checkpoint database the thread lives in."""
    cmd = f"kernelskill optimize {shlex.quote(problem_path)} --thread {shlex.quote(thread)}"
    return cmd + (f" --config {shlex.quote(settings.config)}" if settings.config else "")


MID_RUN = "unfinished: written when a new best appeared, the run still going"


def write_outputs(state: GraphState, thread_id: str, out_dir: Path, unfinished: str | None = None,
                  resume: str | None = None) -> tuple[Path, bool]:
    """solution.py and report.json, each written whole: an interrupt or a crash leaves the old
    file or the new one. `unfinished`: why the run has not ended yet (MID_RUN, an interrupt), the
    report's stop_reason then, beside `resume`, the command that goes on with it."""
    _, is_reference, _ = solution_choice(state)
    report = build_report(state, thread_id, unfinished=unfinished, resume=resume)
    write_atomic(out_dir / "solution.py", solution_text(state, thread_id))
    write_atomic(out_dir / "report.json", json.dumps(report, indent=1, default=str))
    return out_dir / "solution.py", is_reference


def _stream(graph: Any, payload: Any, config: dict, thread_id: str, out_dir: Path,
            say: Printer, resume: str) -> None:
    """Run the graph from `payload` (None: resume), saying one line per node update, with the
    seconds since the previous update (the node's own time: nodes run one at a time)."""
    best_hash, last_profile, t0 = None, None, time.monotonic()
    # durability="sync": each step's checkpoint is on disk before the next step starts (LangGraph's
    # default writes it in the background, racing the next step): a crash loses at most the step
    # in flight, and `unfinished` resumes one whose result was already saved.
    for chunk in graph.stream(payload, config, stream_mode="updates", durability="sync"):
        for node, update in chunk.items():
            # Write a new best before saying anything: nothing is lost if killed now.
            if update and update.get("best") is not None and update["best"].hash != best_hash:
                best_hash = update["best"].hash
                state = GraphState.model_validate(graph.get_state(config).values)
                write_outputs(state, thread_id, out_dir, MID_RUN, resume)
            profile = (update or {}).get("profile")
            line = describe(node, update or {}, profile is not None and profile == last_profile)
            last_profile = profile if profile is not None else last_profile
            took, t0 = time.monotonic() - t0, time.monotonic()
            if line:
                say(f"{line} ({took:.0f} s)" if took >= 1 else line)


def run(problem: Problem, settings: RunSettings, thread_id: str, checkpoints: Path | str, out_dir: Path,
        say: Printer = _stderr, resume_hint: str | None = None) -> GraphState:
    """Start or resume thread `thread_id` in `checkpoints` (a SQLite file or a state-db URL, see
    checkpointer.py); returns the final state."""
    from .checkpointer import open_checkpointer

    stack = contextlib.ExitStack()  # the saver's connection, closed however the run ends
    try:
        graph = build_graph(stack.enter_context(open_checkpointer(checkpoints)))
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
                f"({settings.size} sizes, author {settings.author}, {plural(settings.rounds, 'round')})")
        try:
            # On a GPU each evaluation leaves a judge starting up for the next one (eval/child.py).
            # Not on the CPU: there the spare's start-up takes a core from the author and the
            # evaluation it would speed up (a 2-core machine has nothing idle to lend it).
            spares = spare_judges() if settings.device == "cuda" else contextlib.nullcontext()
            with spares:
                _stream(graph, payload, config, thread_id, out_dir, say,
                        resume_hint or resume_command(problem.path, thread_id, settings))
        except KeyboardInterrupt as e:
            stored = graph.get_state(config).values
            kept = RunSettings.model_validate(stored["settings"]) if stored else settings
            hint = resume_hint or resume_command(problem.path, thread_id, kept)
            if stored:  # the out folder says the run was cut short (a report there may say "running")
                write_outputs(GraphState.model_validate(stored), thread_id, out_dir,
                              f"interrupted by {interrupt_name(e)} before the run ended", hint)
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
        stack.close()

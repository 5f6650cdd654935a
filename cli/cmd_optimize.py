"""`kernelskill optimize PROBLEM`: run the agent graph and write DIR/solution.py + report.json."""

from __future__ import annotations

import argparse
import shlex
import threading
import time
from pathlib import Path
from typing import Any

from .options import (
    add_device_arguments,
    add_precision_arguments,
    add_state_db_argument,
    precision_of,
    require_gpu,
    resolve_device,
    with_state_db,
)

EXAMPLES = (
    "kernelskill optimize problems/level2/01_linear_gelu_scale.py --device cpu --rounds 2",
    "kernelskill optimize problems/level2/01_linear_gelu_scale.py --thread ID   (resume)",
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    from ..state.config import LLMConfig, RunConfig

    run_default, llm_default = RunConfig.model_fields, LLMConfig.model_fields
    p.add_argument("problem", help="problem file (class Model, get_inputs, get_init_inputs)")
    p.add_argument("--author", choices=["builtin", "llm"], default=None, help="who writes kernels "
                   f"(default: {run_default['author'].default}, or the config file's)")
    p.add_argument("--model", default=None, help="LLM model name, with --author llm "
                   f"(default: {llm_default['model'].default}, or the config file's)")
    p.add_argument("--base-url", default=None, help="OpenAI-compatible endpoint, with --author llm "
                   "(default: $OPENAI_BASE_URL, else OpenAI's)")
    add_device_arguments(p)
    p.add_argument("--rounds", type=int, default=None, help="optimization rounds at most "
                   f"(default: {run_default['rounds'].default}, or the config file's)")
    p.add_argument("--out", default=None, help="output folder (default: runs/<problem>)")
    p.add_argument("--thread", default=None, help="thread id: resume it with its own options if it exists, "
                   "else start it (default: a new thread, <problem>-<date>-<time>)")
    p.add_argument("--config", default=None, help="configuration file, TOML, YAML or JSON "
                   "(default: none, the built-in defaults)")
    add_precision_arguments(p)
    add_state_db_argument(p)


def run(args: argparse.Namespace) -> int:
    from ..eval.problem import ProblemError, check_problem_source, read_source
    from ..nodes.runtime import set_config
    from ..state.config import KernelSkillConfig
    from ..state.state_db import StateDBError
    from .main import UsageError

    try:
        cfg = KernelSkillConfig.load(args.config)
        source = read_source(args.problem, "problem")
        check_problem_source(source, args.problem)
    except (ProblemError, FileNotFoundError, ValueError) as e:
        raise UsageError(str(e).splitlines()[0]) from None
    if args.rounds is not None and args.rounds < 1:
        raise UsageError("--rounds must be at least 1")
    precision = precision_of(args)
    cfg, db = with_state_db(cfg, args.state_db)
    existing = None
    if args.thread:
        from ..graph.threads import stored_state

        try:
            existing = stored_state(db, args.thread)
        except StateDBError as e:
            raise UsageError(str(e)) from None
    if existing is not None:
        problem, settings, cfg = _resumed(args, source, precision, cfg, existing)
    else:
        problem, settings, cfg = _fresh(args, source, precision, cfg)
    cfg = cfg.override("paths", state_db=db.url)  # the thread's config file may name none
    set_config(cfg)
    reference = _ReferenceCheck(problem, settings) if existing is None else None
    try:
        _check_author(settings)
        from ..graph.runner import run as run_graph
        if reference is not None:
            reference.wait()
    except BaseException:
        if reference is not None:
            reference.stop()
        raise
    thread = args.thread or f"{problem.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    out = Path(settings.out) if settings.out else Path("runs") / problem.name

    hint = None
    if args.state_db:  # the resume command names the database the thread lives in (no password)
        from ..graph.runner import resume_command

        hint = f"{resume_command(problem.path, thread, settings)} --state-db {shlex.quote(db.redacted())}"
    try:
        final = run_graph(problem, settings, thread, db.url, out, resume_hint=hint)
    except StateDBError as e:
        raise UsageError(str(e)) from None
    if final.verdict is not None and final.verdict.usage_error:  # the problem's fault: one line, exit 2
        raise UsageError(final.verdict.reason or "the evaluator cannot use this problem")
    return 0 if final.best is not None else 1


def _fresh(args: argparse.Namespace, source: str, precision: str | None, cfg: Any) -> tuple[Any, Any, Any]:
    """A new thread: its settings from the configuration and the command line, kept in the thread."""
    from ..state.config import run_settings
    from ..state.records import Problem
    from .resume import absolute

    device, size = resolve_device(args.device, args.size)
    require_gpu(device)  # now, not after a run that can only keep the reference
    cfg = cfg.override("run", device=device, size=size, author=args.author, rounds=args.rounds,
                       precision=precision)
    cfg = cfg.override("llm", model=args.model, base_url=args.base_url)
    settings = run_settings(cfg, args.model, args.base_url).model_copy(
        update={"out": absolute(args.out), "config": absolute(args.config)})
    problem = Problem(name=Path(args.problem).stem, path=str(args.problem), source=source,
                      size=settings.size)
    return problem, settings, cfg


def _resumed(args: argparse.Namespace, source: str, precision: str | None, cfg: Any,
             state: Any) -> tuple[Any, Any, Any]:
    """An existing thread: its own problem and settings; a changed option is refused in one line."""
    from ..state.config import KernelSkillConfig
    from .main import UsageError
    from .resume import problem_mismatch, refusal, requested

    file_run = {k: getattr(cfg.run, k) for k in cfg.run.model_fields_set} if args.config else {}
    why = problem_mismatch(args.thread, state.problem, source) or \
        refusal(args.thread, state.settings, requested(args, precision, file_run))
    if why:
        raise UsageError(why)
    if state.settings.config and not args.config:  # the file it started with: LLM endpoint, paths
        try:
            cfg = KernelSkillConfig.load(state.settings.config)
        except (FileNotFoundError, ValueError) as e:
            raise UsageError(f"thread {args.thread} was started with --config {state.settings.config}, "
                             f"which no longer loads: {str(e).splitlines()[0]}") from None
    return state.problem, state.settings, cfg


def _check_author(settings: Any) -> None:
    from ..authors.base import AuthorError
    from ..nodes.runtime import get_author
    from .main import UsageError

    try:  # a misconfigured author (no key, no endpoint) is a usage error, not a traceback mid-run
        get_author(settings)
    except AuthorError as e:
        raise UsageError(str(e)) from None


class _ReferenceCheck:
    """`_check_reference` in a thread, started at once. Rationale: the check is a child process
    (3-6 s on the 2-core machine, mostly importing torch), and the author's imports (torch,
    triton: 3-6 s) and the graph's (langgraph: 2-3 s) overlap it instead of following it."""

    def __init__(self, problem: Any, settings: Any) -> None:
        # Imported here, not first in the thread: two threads importing one module can deadlock.
        from ..eval import api, reference_check  # noqa: F401

        self.outcome: list[BaseException | None] = []
        self.worker = threading.Thread(target=self._check, args=(problem, settings),
                                       name="reference-check", daemon=True)
        self.worker.start()

    def _check(self, problem: Any, settings: Any) -> None:
        try:
            _check_reference(problem, settings)
            self.outcome.append(None)
        except BaseException as e:  # noqa: BLE001 - handed to the waiting thread
            self.outcome.append(e)

    def wait(self) -> None:
        """Wait for the check; raise what it raised."""
        self.worker.join()
        if self.outcome and self.outcome[0] is not None:
            raise self.outcome[0]

    def stop(self, within_s: float = 10.0) -> None:
        """The run ends early (an author error, Ctrl-C): end the check's child and let the thread
        remove its scratch folder, so that no child outlives us writing into a folder the
        interpreter's exit is deleting. Repeated: the child may start after the first call."""
        from ..eval.child import stop_all

        deadline = time.monotonic() + within_s
        while self.worker.is_alive() and time.monotonic() < deadline:
            stop_all()
            self.worker.join(0.2)


def _check_reference(problem: Any, settings: Any) -> None:
    """The problem's reference must build and run on this device and size before any candidate is
    judged against it (a child process, like every evaluation); otherwise one line, exit 2."""
    from ..eval.reference_check import check_reference
    from .main import UsageError

    why = check_reference(problem.source, settings.device, settings.size, settings.precision,
                          problem.path, timeout_s=settings.eval_timeout_s)
    if why:
        raise UsageError(why)

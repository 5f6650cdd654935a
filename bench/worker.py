"""A bench worker process: runs problems one at a time for the pool (bench/pool.py).

    python -m kernelskill.bench.worker      (CUDA_VISIBLE_DEVICES set by the pool)

Protocol, one JSON object per line: stdin gets a setup line, then one task per line; stdout
answers {"ready": true} once set up, then {"key", "wall_s", "error", "host", "gpu_index"} per task
(the last two say where it ran, for the result row). The process stays up between problems so the
skill index, the embedding model and Triton's caches load once.
A closed stdin while idle means "no more work"; while busy it means the bench died, so the
worker interrupts itself (the evaluator's cleanup kills its child) and exits.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .pool import CPUS_ENV

Say = Callable[[str], None]
Runner = Callable[[dict[str, Any], Say], None]


def make_runner(setup: dict[str, Any]) -> Runner:
    """Install the bench's configuration; return a function running one task (local or on a server)."""
    from ..eval.problem import ProblemError, check_problem_source, read_source
    from ..nodes.runtime import set_config
    from ..state.config import KernelSkillConfig
    from ..state.graph_state import RunSettings
    from ..state.records import Problem

    cfg = KernelSkillConfig.model_validate(setup["config"])
    set_config(cfg)
    settings = RunSettings.model_validate(setup["settings"])
    shared_db = _shared_state_db(cfg)
    server = setup.get("server")

    def run_task(task: dict[str, Any], say: Say) -> None:
        out = Path(task["out"])
        try:
            source = read_source(task["path"], "problem")
            check_problem_source(source, task["path"])
        except ProblemError as e:
            raise RuntimeError(str(e).splitlines()[0]) from None
        problem = Problem(name=task["name"], path=task["path"], source=source, size=settings.size)
        checkpoints = shared_db or out / "threads.sqlite"
        if not server:
            _check_reference(problem, settings, checkpoints, task["thread_id"])
        if server:
            from .server import run_on_server

            run_on_server(server, problem, settings, task["thread_id"], out, say)
        else:
            from ..graph.runner import run

            run(problem, settings, task["thread_id"], checkpoints, out, say=say,
                resume_hint="kernelskill bench --resume --out <the bench folder>")

    return run_task


def _shared_state_db(cfg: Any) -> str | None:
    """The bench's PostgreSQL state database, where every worker on every host checkpoints (a
    problem then resumes wherever it runs next); None: each problem's own SQLite file in the bench
    folder, as a folder copied between hosts carries its threads along."""
    from ..state.state_db import parse_state_db

    return cfg.paths.state_db if cfg.paths.state_db and parse_state_db(cfg.paths.state_db).is_postgres \
        else None


def _check_reference(problem: Any, settings: Any, checkpoints: Path | str, thread_id: str) -> None:
    """A new problem's reference must run on this device and size (a child, seconds) before the
    graph judges candidates against it; a broken one is the row's error, not every candidate's."""
    from ..eval.reference_check import check_reference
    from ..graph.threads import stored_state

    if stored_state(checkpoints, thread_id) is not None:  # checked when the thread started
        return
    why = check_reference(problem.source, settings.device, settings.size, settings.precision,
                          problem.path, timeout_s=settings.eval_timeout_s)
    if why:
        raise RuntimeError(why)


def _logger(out: Path) -> tuple[Say, Callable[[], None]]:
    out.mkdir(parents=True, exist_ok=True)
    f = (out / "log.txt").open("a", buffering=1)
    cpus = f" CPUs {os.environ[CPUS_ENV]}" if os.environ.get(CPUS_ENV) else ""
    f.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} worker pid {os.getpid()} "
            f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', '')}{cpus}\n")
    return (lambda line: f.write(line + "\n")), f.close


def pin_cpus() -> None:
    """Pin this worker, and so the evaluator processes it starts, to the pool's CPU share
    (pool.cpu_shares); nothing to do without one or where the OS cannot pin."""
    share = os.environ.get(CPUS_ENV, "")
    if share and hasattr(os, "sched_setaffinity"):
        with contextlib.suppress(OSError, ValueError):  # CPUs gone or not allowed: run unpinned
            os.sched_setaffinity(0, {int(c) for c in share.split(",")})


def main() -> int:
    # Ctrl-C and the self-interrupt below must raise KeyboardInterrupt even if this process was started
    # with SIGINT ignored (as `cmd &` in a script does): that is what runs the evaluator's cleanup.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    # ... or blocked: a Ray worker blocks it in the thread that runs tasks, and the mask survives exec.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    pin_cpus()
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # libraries that print must not corrupt the protocol: their stdout goes to the log

    def send(msg: dict[str, Any]) -> None:
        proto.write(json.dumps(msg) + "\n")

    inbox: queue.Queue[str | None] = queue.Queue()
    busy = threading.Event()

    def read() -> None:
        for line in sys.stdin:
            inbox.put(line)
        inbox.put(None)
        if busy.is_set():  # the bench is gone mid-problem: stop now rather than run on unobserved
            os.kill(os.getpid(), signal.SIGINT)
            threading.Timer(30.0, os._exit, (130,)).start()

    threading.Thread(target=read, daemon=True).start()
    first = inbox.get()
    if first is None:
        return 0
    setup = json.loads(first)
    run_task = make_runner(setup)
    send({"ready": True})
    with keep_spare_judges(setup):
        return _serve(inbox, busy, run_task, send)


def keep_spare_judges(setup: dict[str, Any]) -> contextlib.AbstractContextManager[None]:
    """On a GPU, one spare judge kept across the worker's problems: each graph run keeps one
    between its own evaluations, and this one is what a problem's first evaluation (the one that
    times the baselines) takes, started while the previous problem finished (5-7 s of judge
    start-up and imports per problem on an H200, 2026-12-02,
    problems/measurements/h200-2026-12-02-spare-judges/). Not for a server, which judges
    elsewhere, nor on the CPU (graph/runner.py says why)."""
    from ..eval.child import spare_judges

    if setup.get("server") or setup["settings"].get("device") != "cuda":
        return contextlib.nullcontext()
    return spare_judges()


def _serve(inbox: queue.Queue[str | None], busy: threading.Event, run_task: Runner,
           send: Callable[[dict[str, Any]], None]) -> int:
    while (line := inbox.get()) is not None:
        task = json.loads(line)
        say, close = _logger(Path(task["out"]))
        busy.set()
        t0, error = time.time(), None
        try:
            run_task(task, say)
        except KeyboardInterrupt:
            say("interrupted")
            return 130
        except Exception as e:  # one problem's crash is recorded; the worker moves on
            say(traceback.format_exc())
            error = f"{type(e).__name__}: {e}".splitlines()[0]
        finally:
            busy.clear()
            close()
        send({"key": task["key"], "wall_s": round(time.time() - t0, 2), "error": error,
              "host": socket.gethostname(), "gpu_index": os.environ.get("CUDA_VISIBLE_DEVICES") or None})
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)

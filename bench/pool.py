"""The worker pool: one worker process per GPU (or per job), fed problems one at a time.

Each worker is `python -m kernelskill.bench.worker` with its own environment (on a GPU
bench, CUDA_VISIBLE_DEVICES names one GPU), so a worker sees exactly one device and a crash
takes down one problem, not the bench. The parent only routes tasks and results; it writes
results.jsonl itself, so a row is on disk the moment its problem ends.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

Task = dict[str, Any]
Reply = dict[str, Any]
INTERRUPTED = (130, -2)  # exit codes of a worker stopped by Ctrl-C (SIGINT)


class PoolError(Exception):
    """A worker could not start: nothing can run (one line, with where its log is)."""


CPUS_ENV = "KERNELSKILL_WORKER_CPUS"
"""The CPUs a worker pins itself (and the evaluator processes it starts) to: comma-separated ids."""


def cpu_shares(cpus: list[int], workers: int) -> list[list[int]]:
    """Disjoint, contiguous shares of `cpus` for GPU bench workers, or no shares (run unpinned)
    when there is one worker or fewer than two CPUs each.

    Rationale: a worker's torch.compile baseline compiles with a process pool as wide as the
    CPUs it may use, and Triton autotunes on the host too; meanwhile another worker may be timing
    a candidate under the protocol, where host launch time counts. Disjoint shares keep one
    worker's compile burst off the cores another is timing on (re-timings of the same candidate
    differed by up to 40% on a 2-GPU host, unexplained; see
    problems/measurements/h200-2026-11-30-rowscale)."""
    if workers < 2 or len(cpus) < 2 * workers:
        return []
    size = len(cpus) // workers
    return [cpus[i * size:(i + 1) * size] for i in range(workers)]


@dataclass
class WorkerSpec:
    label: str  # "GPU 0", "cpu", "job 2": said in progress lines
    env: dict[str, str] = field(default_factory=dict)  # overrides on top of the parent's environment


@dataclass
class _Worker:
    spec: WorkerSpec
    log: Path
    proc: subprocess.Popen[str]
    ready: bool = False
    task: Task | None = None
    started: float = 0.0


def _tail(path: Path) -> str:
    try:
        lines = [x for x in path.read_text(errors="replace").splitlines() if x.strip()]
    except OSError:
        return "no log"
    return lines[-1][:200] if lines else "no output"


class WorkerPool:
    def __init__(self, specs: list[WorkerSpec], setup: dict[str, Any], log_dir: Path,
                 command: list[str] | None = None):
        self.specs, self.setup, self.log_dir = specs, setup, log_dir
        self.command = command or [sys.executable, "-m", "kernelskill.bench.worker"]
        self.base_env = dict(os.environ)
        self.events: queue.Queue[tuple[int, str | None]] = queue.Queue()
        self.workers: list[_Worker | None] = []

    def _start(self, i: int) -> _Worker:
        spec = self.specs[i]
        log = self.log_dir / f"worker-{i}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("a") as logf:  # the child keeps its own handle
            proc = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=logf,
                                    env={**self.base_env, **spec.env}, text=True, bufsize=1)
        threading.Thread(target=self._pump, args=(i, proc.stdout), daemon=True).start()
        w = _Worker(spec=spec, log=log, proc=proc)
        self._send(w, self.setup)
        return w

    def _pump(self, i: int, stream: IO[str] | None) -> None:
        assert stream is not None
        for line in stream:
            self.events.put((i, line))
        self.events.put((i, None))

    @staticmethod
    def _send(w: _Worker, msg: dict[str, Any]) -> None:
        assert w.proc.stdin is not None
        with contextlib.suppress(BrokenPipeError, OSError):  # a dead worker shows up as EOF instead
            w.proc.stdin.write(json.dumps(msg) + "\n")
            w.proc.stdin.flush()

    def run(self, tasks: list[Task], on_result: Callable[[Task, Reply, str], None],
            on_start: Callable[[Task, str], None] | None = None) -> None:
        """Run every task; on_result(task, reply, worker label) runs in this thread as each ends.

        A reply is the worker's {"wall_s", "error"}; a worker that dies mid-task yields an error reply
        and is replaced. Ctrl-C (or an exception from a callback) stops every worker."""
        pending: deque[Task] = deque(tasks)
        try:
            self.workers = [self._start(i) for i in range(min(len(self.specs), len(pending)))]
            live = len(self.workers)

            def assign(i: int) -> None:
                w = self.workers[i]
                assert w is not None
                if pending:
                    w.task, w.started = pending.popleft(), time.time()
                    self._send(w, w.task)
                    if on_start:
                        on_start(w.task, w.spec.label)
                else:  # no more work: a closed stdin lets the worker exit
                    assert w.proc.stdin is not None
                    with contextlib.suppress(OSError):
                        w.proc.stdin.close()

            while live:
                try:
                    i, line = self.events.get(timeout=1.0)
                except queue.Empty:
                    continue
                w = self.workers[i]
                if w is None:
                    continue
                if line is not None:
                    try:
                        msg = json.loads(line)
                    except ValueError:
                        continue
                    if msg.get("ready"):
                        w.ready = True
                    elif w.task is not None:
                        task, w.task = w.task, None
                        on_result(task, msg, w.spec.label)
                    assign(i)
                    continue
                rc = w.proc.wait()  # EOF: the worker exited
                if rc in INTERRUPTED:
                    raise KeyboardInterrupt
                if not w.ready:
                    raise PoolError(f"the worker for {w.spec.label} failed to start (exit code {rc}): "
                                    f"{_tail(w.log)} (log: {w.log})")
                if w.task is not None:
                    task, w.task = w.task, None
                    on_result(task, {"wall_s": round(time.time() - w.started, 2),
                                     "error": f"worker on {w.spec.label} died (exit code {rc}); "
                                              f"see {w.log}", "exit_code": rc}, w.spec.label)
                if pending:
                    self.workers[i] = self._start(i)
                else:
                    self.workers[i] = None
                    live -= 1
        finally:
            self._stop()

    def _stop(self) -> None:
        alive = [w for w in self.workers if w is not None and w.proc.poll() is None]
        for w in alive:
            with contextlib.suppress(OSError):
                w.proc.stdin.close()  # type: ignore[union-attr]  # busy workers interrupt themselves
        deadline = time.time() + 20
        for w in alive:
            try:
                w.proc.wait(timeout=max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                w.proc.kill()
                w.proc.wait()

"""The bench on a Ray cluster (`kernelskill bench --ray [ADDRESS]`): one Ray task per problem
(bench/ray_task.py), holding one GPU on a GPU bench or one CPU on a CPU bench, with the same
`run(tasks, on_result)` as the local pool (bench/pool.py), so the runner writes each row as its
problem ends (ray.wait hands back tasks in the order they finish).

A task whose worker dies (its subprocess, the Ray worker or the whole node) is retried by Ray, on
whichever worker is free, up to `max_retries` times; being the same thread in the same bench folder,
a retry continues from the problem's checkpoint. After the last try the reply is an error, so the
problem is recorded as crashed (and `--resume` runs it again), never dropped.

Imported only with --ray: the local pool stays the default and needs no Ray.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import socket
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .pool import PoolError, Reply, Task

INSTALL = "--ray needs Ray, an optional extra: pip install 'kernelskill[ray]'"
LOCAL = "local"  # ray.init's address for "start a cluster here"


def ray_installed() -> bool:
    return importlib.util.find_spec("ray") is not None


def parse_address(text: str) -> str:
    """--ray's value -> ray.init's address: '' starts a local cluster; 'auto', 'local', host:port and
    ray://host:port pass through. ValueError for anything else, which is most often a problem PATH
    that argparse gave to --ray because it came right after it."""
    if not text:
        return LOCAL
    if text in ("auto", LOCAL) or ":" in text:
        return text
    raise ValueError(f"--ray {text}: not a Ray address (auto, host:port or ray://host:port); "
                     "to start a local cluster, put --ray after the problem paths")


@dataclass
class RayOptions:
    address: str = LOCAL  # parse_address's result
    gpu: bool = True  # each task holds one GPU (a GPU bench), else one CPU
    max_retries: int = 2  # tries after the first when a task's worker dies
    max_in_flight: int | None = None  # --jobs: at most this many tasks submitted at once (None: Ray decides)
    command: list[str] | None = None  # the worker command (tests use a stand-in)


def _placement_label(reply: Reply) -> str:
    host = reply.get("host") or "ray"
    return f"{host} GPU {reply['gpu_index']}" if reply.get("gpu_index") else f"{host} cpu"


def _crash_line(e: BaseException, tries: int) -> str:
    """One line for a failed task: the cause's first line (Ray's messages run long), saying so where
    it is a death that Ray retried."""
    import ray.exceptions as rx

    from .ray_task import WorkerDied

    cause = getattr(e, "cause", None) or e
    first = next((ln.strip() for ln in str(cause).splitlines() if ln.strip()), type(cause).__name__)[:240]
    died = (WorkerDied, rx.WorkerCrashedError, rx.NodeDiedError, rx.OutOfMemoryError, rx.LocalRayletDiedError)
    return f"crashed on every one of {tries} tries, last: {first}" if isinstance(cause, died) \
        else f"the Ray task failed: {first}"


def _probe(address: str, where: str) -> None:
    """PoolError at once when nothing listens at a host:port address: ray.init would retry for minutes
    (over 13 on Ray 2.60, to a closed local port) before saying so."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        return
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as e:
        raise PoolError(f"cannot reach {where}: {e.strerror or e} (start one with `ray start --head`, or "
                        "drop the address to start a local one)") from None


class RayPool:
    def __init__(self, options: RayOptions, setup: dict[str, Any], log_dir: Path,
                 say: Callable[[str], None] = lambda _m: None):
        self.options, self.setup, self.log_dir, self.say = options, setup, log_dir, say
        self.started_ray = False

    def connect(self) -> None:
        """Join the cluster at the address, or start a local one; PoolError (one line) if nothing can run."""
        import ray

        address = self.options.address
        where = "a local cluster" if address == LOCAL else f"the cluster at {address}"
        if not ray.is_initialized():  # a test (or a notebook) may already be connected
            _probe(address, where)
            try:
                ray.init(address=self.options.address, log_to_driver=False, logging_level=logging.WARNING,
                         **({"include_dashboard": False} if self.options.address == LOCAL else {}))
            except Exception as e:  # ConnectionError, or anything ray.init reports: one line
                first = (str(e).strip().splitlines() or [type(e).__name__])[0]
                # Ray's own clusters want a token (its default); with an explicit address the driver
                # sends it only when told to.
                hint = ("; for a cluster with token authentication (Ray's default) set RAY_AUTH_MODE=token "
                        "and copy its token to ~/.ray/auth_token" if ":" in self.options.address
                        and not os.environ.get("RAY_AUTH_MODE") else
                        " (start one with `ray start --head`, or drop the address to start a local one)")
                raise PoolError(f"cannot reach {where}: {first[:200]}{hint}") from None
            self.started_ray = True
        res = ray.cluster_resources()
        gpus, cpus, nodes = int(res.get("GPU", 0)), int(res.get("CPU", 0)), len(ray.nodes())
        if self.options.gpu and gpus < 1:
            raise PoolError(f"{where} has no GPU: start Ray's nodes on GPU hosts, "
                            "or bench with --device cpu")
        self.say(f"ray: {where}, {nodes} node(s), {gpus} GPU(s), {cpus} CPU(s); one task per problem "
                 f"holding one {'GPU' if self.options.gpu else 'CPU'}, up to {self.options.max_retries} "
                 "retries when a worker dies")

    def run(self, tasks: list[Task], on_result: Callable[[Task, Reply, str], None]) -> None:
        """Run every task; on_result(task, reply, where it ran) in this thread as each ends. A worker
        that cannot start anywhere stops the bench (PoolError), as in the local pool."""
        import ray

        from .ray_task import WorkerDied, run_problem

        self.connect()
        o = self.options
        remote = ray.remote(run_problem).options(
            num_gpus=1 if o.gpu else 0, num_cpus=1, max_retries=o.max_retries, retry_exceptions=[WorkerDied])
        setup = ray.put(self.setup)
        pending, running = deque(tasks), {}
        try:
            while pending or running:
                while pending and (o.max_in_flight is None or len(running) < o.max_in_flight):
                    task = pending.popleft()
                    logs = str(self.log_dir / task["key"].replace("/", "__"))
                    running[remote.remote(setup, task, logs, o.command)] = (task, time.time())
                ready, _ = ray.wait(list(running), num_returns=1, timeout=1.0)
                for ref in ready:
                    task, sent = running.pop(ref)
                    try:
                        reply = ray.get(ref)
                    except ray.exceptions.RayError as e:
                        if isinstance(getattr(e, "cause", None), PoolError):
                            raise PoolError(str(e.cause)) from None  # type: ignore[attr-defined]
                        reply = {"wall_s": round(time.time() - sent, 2),
                                 "error": _crash_line(e, o.max_retries + 1)}
                    on_result(task, reply, _placement_label(reply))
        finally:
            self._stop(list(running))

    def _stop(self, refs: list[Any]) -> None:
        """Interrupt tasks still running (their workers stop as on Ctrl-C, checkpoints kept), then
        leave the cluster, stopping it if this bench started it."""
        import ray

        for ref in refs:
            ray.cancel(ref)  # KeyboardInterrupt in the task: the pool closes its worker's stdin
        if refs:
            ray.wait(refs, num_returns=len(refs), timeout=25.0)
        if self.started_ray:
            ray.shutdown()

"""One bench problem as a Ray task: the pool's worker (bench/worker.py) in a subprocess on the GPU
Ray gave this task, so a Ray bench runs the same worker and evaluator as the local pool, and a
crash still takes down one subprocess, not the Ray worker.

Runs on the cluster's workers; imported there by reference from this module (every host needs the
same kernelskill installed). The driver side is bench/ray_pool.py.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

from .pool import CPUS_ENV, Reply, Task, WorkerPool, WorkerSpec, cpu_shares


class WorkerDied(Exception):
    """The worker subprocess died mid-problem (killed, OOM, crashed): Ray retries the task."""


def _node_gpus(node_id: str) -> int:
    """How many GPUs Ray manages on this node (so the CPU shares match the node's one task per GPU)."""
    import ray

    for node in ray.nodes():
        if node.get("NodeID") == node_id:
            return int(node.get("Resources", {}).get("GPU", 0))
    return 0


def worker_env(gpu_ids: list[str], node_gpus: int, cpus: list[int]) -> dict[str, str]:
    """The worker's environment on this node: the task's GPU, and on a GPU node the same disjoint CPU
    share the local pool would give that GPU's worker (pool.cpu_shares says why)."""
    if not gpu_ids:
        return {}
    env = {"CUDA_VISIBLE_DEVICES": ",".join(gpu_ids)}
    shares = cpu_shares(cpus, node_gpus)
    if shares and gpu_ids[0].isdigit():  # Ray's ids are the node's device indices
        env[CPUS_ENV] = ",".join(map(str, shares[int(gpu_ids[0]) % len(shares)]))
    return env


def run_problem(setup: dict[str, Any], task: Task, log_dir: str, command: list[str] | None) -> Reply:
    """Run one task in a fresh worker subprocess; its reply plus where it ran (host, Ray node, GPU)."""
    import ray

    ctx = ray.get_runtime_context()
    gpu_ids = [str(g) for g in ray.get_gpu_ids()]
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    env = worker_env(gpu_ids, _node_gpus(ctx.get_node_id()) if gpu_ids else 0, cpus)
    host = socket.gethostname()
    label = f"{host} GPU {env['CUDA_VISIBLE_DEVICES']}" if gpu_ids else f"{host} cpu"
    replies: list[Reply] = []
    pool = WorkerPool([WorkerSpec(label, env)], setup, Path(log_dir), command)
    pool.run([task], lambda _t, reply, _label: replies.append(reply))  # PoolError: cannot start here
    reply = replies[0]
    if "exit_code" in reply:  # the pool's reply for a worker that died mid-task
        raise WorkerDied(reply["error"])
    return {"host": host, "gpu_index": env.get("CUDA_VISIBLE_DEVICES"), **reply, "node_id": ctx.get_node_id()}

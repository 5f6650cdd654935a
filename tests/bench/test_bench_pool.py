"""The worker pool with a stand-in worker (same line protocol, no graph): every task is answered
exactly once, each worker gets its own environment, a dying worker costs one task and is
replaced, and a worker that cannot start stops the bench with one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from kernelskill.bench.pool import CPUS_ENV, PoolError, WorkerPool, WorkerSpec, cpu_shares

FAKE = """
import json, os, sys
setup = json.loads(sys.stdin.readline())
if setup.get("fail_start"):
    print("cannot import torch", file=sys.stderr)
    sys.exit(3)
print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    task = json.loads(line)
    if task["key"] == "die":
        os._exit(9)
    print("library noise on stdout", flush=True)  # not JSON: ignored by the pool
    print(json.dumps({"key": task["key"], "wall_s": 0.5, "error": None,
                      "gpu": os.environ.get("CUDA_VISIBLE_DEVICES")}), flush=True)
"""


def pool(tmp: Path, setup: dict[str, object]) -> WorkerPool:
    script = tmp / "fake_worker.py"
    script.write_text(FAKE)
    specs = [WorkerSpec("GPU 0", {"CUDA_VISIBLE_DEVICES": "5"}),
             WorkerSpec("GPU 1", {"CUDA_VISIBLE_DEVICES": "7"})]
    return WorkerPool(specs, setup, tmp / "workers", command=[sys.executable, str(script)])


def test_every_task_once_with_its_workers_environment(tmp_path: Path) -> None:
    keys = ["a", "b", "die", "c", "d", "e"]
    seen: list[tuple[str, dict, str]] = []
    started: list[str] = []
    pool(tmp_path, {}).run([{"key": k} for k in keys], lambda t, r, label: seen.append((t["key"], r, label)),
                           on_start=lambda t, label: started.append(t["key"]))
    assert sorted(k for k, _, _ in seen) == sorted(keys) and sorted(started) == sorted(keys)
    for key, reply, label in seen:
        if key == "die":
            assert "died (exit code 9)" in reply["error"] and label in ("GPU 0", "GPU 1")
        else:
            assert reply["error"] is None and reply["gpu"] == {"GPU 0": "5", "GPU 1": "7"}[label]


def test_a_worker_that_cannot_start_stops_the_bench(tmp_path: Path) -> None:
    with pytest.raises(PoolError, match="failed to start .*exit code 3.*cannot import torch"):
        pool(tmp_path, {"fail_start": True}).run([{"key": "a"}], lambda *_: None)


def test_a_failing_callback_stops_the_workers(tmp_path: Path) -> None:
    p = pool(tmp_path, {})

    def boom(*_: object) -> None:
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        p.run([{"key": k} for k in "abcdef"], boom)
    assert all(w is None or w.proc.poll() is not None for w in p.workers)


def test_gpu_workers_get_disjoint_cpu_shares() -> None:
    assert cpu_shares(list(range(32)), 2) == [list(range(16)), list(range(16, 32))]
    assert cpu_shares([0, 2, 4, 6, 8, 10, 12], 3) == [[0, 2], [4, 6], [8, 10]]  # the rest stay unused
    assert cpu_shares(list(range(32)), 1) == []  # one worker: nothing to share
    assert cpu_shares([0, 1, 2], 2) == []  # under two CPUs each: run unpinned


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="the OS cannot pin CPUs")
def test_a_worker_pins_itself_and_its_children_to_its_share() -> None:
    mine = sorted(os.sched_getaffinity(0))
    show = "import os; print(sorted(os.sched_getaffinity(0)))"
    code = ("import os, subprocess, sys\n"
            "from kernelskill.bench.worker import pin_cpus\n"
            "pin_cpus()\n"
            f"child = subprocess.run([sys.executable, '-c', {show!r}], capture_output=True, text=True)\n"
            "print(child.stdout, end='')\n"
            f"{show}\n")
    for share, want in ((str(mine[0]), [mine[0]]), ("", mine), ("99999", mine)):  # bad ids: unpinned
        env = {**os.environ, CPUS_ENV: share}
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                             check=True).stdout.split("\n")
        assert out[:2] == [str(want), str(want)]  # the evaluator it starts, then the worker

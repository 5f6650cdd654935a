"""The Ray pool on one local Ray cluster with two declared (fake) GPUs, driving a stand-in worker
(the pool's line protocol, no graph): each task holds its own GPU, replies stream back as tasks
finish, a task whose worker dies (its subprocess, or the Ray worker itself) is retried, one that
dies every time is recorded as crashed, and a worker that cannot start stops the bench."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'kernelskill[ray]'")

from kernelskill.bench.pool import PoolError  # noqa: E402
from kernelskill.bench.ray_pool import RayOptions, RayPool, parse_address  # noqa: E402

# Each start appends a line to the task's `tries` file; `behaviour` says what the n-th start does.
FAKE = """
import json, os, signal, sys, time
setup = json.loads(sys.stdin.readline())
if setup.get("fail_start"):
    print("cannot import torch", file=sys.stderr)
    sys.exit(3)
print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    task = json.loads(line)
    with open(task["tries"], "a") as f:
        f.write(f"{time.time()} {os.environ.get('CUDA_VISIBLE_DEVICES', '')}\\n")
    n = len(open(task["tries"]).read().splitlines())
    act = task.get("behaviour", ["ok"])[min(n, len(task.get("behaviour", ["ok"]))) - 1]
    if act == "die":
        os._exit(9)
    if act == "kill-ray-worker":  # the Ray worker running this task dies, as on a lost node
        os.kill(os.getppid(), signal.SIGKILL)
        time.sleep(2)
        os._exit(0)
    started = time.time()
    deadline = started + 60  # bounded: a pool that holds replies back fails the test, not hangs it
    while not all(os.path.exists(p) for p in task.get("wait_for", [])) and time.time() < deadline:
        time.sleep(0.05)
    waited_out = time.time() >= deadline
    time.sleep(task.get("sleep", 0))
    print(json.dumps({"key": task["key"], "wall_s": 0.1, "error": None, "tries": n,
                      "started": started, "waited_out": waited_out}), flush=True)
"""


@pytest.fixture(scope="module")
def cluster() -> Any:
    ray.init(address="local", num_cpus=2, num_gpus=2, include_dashboard=False, log_to_driver=False,
             object_store_memory=100 * 2**20)
    yield
    ray.shutdown()


def _run(tmp: Path, tasks: list[dict[str, Any]], setup: dict[str, Any] | None = None,
         **options: Any) -> list[tuple[str, dict[str, Any], str]]:
    script = tmp / "fake_worker.py"
    script.write_text(FAKE)
    for t in tasks:
        t["tries"] = str(tmp / f"{t['key']}.tries")
    seen: list[tuple[str, dict[str, Any], str]] = []

    def on_result(task: dict[str, Any], reply: dict[str, Any], label: str) -> None:
        seen.append((task["key"], reply, label))
        (tmp / f"{task['key'].replace('/', '__')}.handed").touch()  # others may wait for it

    pool = RayPool(RayOptions(command=[sys.executable, str(script)], **options), setup or {}, tmp / "workers")
    pool.run(tasks, on_result)
    return seen


def test_each_task_holds_its_own_gpu_and_replies_stream_as_they_end(cluster: None, tmp_path: Path) -> None:
    # "slow" runs until the other four were handed back to the driver, however long a loaded
    # machine takes to start their workers: a pool that held replies until every task was back
    # makes it wait out its deadline instead.
    handed = [str(tmp_path / f"{k}.handed") for k in "abcd"]
    tasks = [{"key": "slow", "wait_for": handed}] + [{"key": k, "sleep": 0.5} for k in "abcd"]
    seen = _run(tmp_path, tasks)
    assert sorted(k for k, _, _ in seen) == ["a", "b", "c", "d", "slow"]
    assert seen[-1][0] == "slow" and not seen[-1][1]["waited_out"]  # the fast ones came back while it ran
    node = ray.get_runtime_context().get_node_id()
    for _key, reply, label in seen:
        assert reply["error"] is None and reply["gpu_index"] in ("0", "1") and reply["node_id"] == node
        assert label == f"{reply['host']} GPU {reply['gpu_index']}"
    # the slow task kept its GPU: every other task ran on the other one, one at a time
    slow_gpu = next(r["gpu_index"] for k, r, _ in seen if k == "slow")
    assert {r["gpu_index"] for k, r, _ in seen if k != "slow"} == {"1" if slow_gpu == "0" else "0"}


def test_a_cpu_bench_takes_no_gpu_and_jobs_caps_the_tasks_in_flight(cluster: None, tmp_path: Path) -> None:
    seen = _run(tmp_path, [{"key": k, "sleep": 0.6} for k in "abc"], gpu=False, max_in_flight=1)
    assert all(r["gpu_index"] is None and label.endswith(" cpu") for _, r, label in seen)
    spans = sorted((r["started"], r["started"] + 0.6) for _, r, _ in seen)
    assert all(a[1] <= b[0] + 0.05 for a, b in zip(spans, spans[1:], strict=False))  # never overlapping


@pytest.mark.parametrize("death", ["die", "kill-ray-worker"])
def test_a_task_whose_worker_dies_is_retried(cluster: None, tmp_path: Path, death: str) -> None:
    seen = _run(tmp_path, [{"key": "t", "behaviour": [death, "ok"]}, {"key": "u"}])
    reply = dict((k, r) for k, r, _ in seen)["t"]
    assert reply["error"] is None and reply["tries"] == 2
    assert len((tmp_path / "t.tries").read_text().splitlines()) == 2


def test_a_task_that_dies_every_time_is_recorded_as_crashed(cluster: None, tmp_path: Path) -> None:
    seen = _run(tmp_path, [{"key": "t", "behaviour": ["die"]}, {"key": "u"}], max_retries=1)
    by_key = {k: r for k, r, _ in seen}
    assert by_key["u"]["error"] is None
    assert by_key["t"]["error"].startswith("crashed on every one of 2 tries, last: worker on ")
    assert "died (exit code 9)" in by_key["t"]["error"] and by_key["t"]["wall_s"] > 0
    assert len((tmp_path / "t.tries").read_text().splitlines()) == 2


def test_a_worker_that_cannot_start_stops_the_bench(cluster: None, tmp_path: Path) -> None:
    with pytest.raises(PoolError, match="failed to start .*exit code 3.*cannot import torch"):
        _run(tmp_path, [{"key": "a"}], setup={"fail_start": True})


def test_addresses() -> None:
    assert parse_address("") == "local" and parse_address("auto") == "auto"
    assert parse_address("10.0.0.1:6379") == "10.0.0.1:6379" and parse_address("ray://h:10001") == "ray://h:10001"
    with pytest.raises(ValueError, match="not a Ray address.*put --ray after the problem paths"):
        parse_address("problems/")


def test_worker_log_per_problem(cluster: None, tmp_path: Path) -> None:
    _run(tmp_path, [{"key": "level1/a"}])
    assert (tmp_path / "workers" / "level1__a" / "worker-0.log").exists()

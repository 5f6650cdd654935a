"""`kernelskill bench --ray` end to end on the CPU: two small problems with the built-in author, one
at a time (--jobs 1), on a running Ray cluster joined by its address. The driver is killed with the
first problem done and the second in flight, then resumed on a local cluster it starts itself: only
the problem in flight runs again, continued from its checkpoint, and every row says where it ran."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from filelock import FileLock

pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'kernelskill[ray]'")

ROOT = Path(__file__).resolve().parents[2]
KEYS = ["level1/12_silu", "level1/14_hardtanh"]
# A running cluster to join, as `ray start --head` leaves one: held until its stdin closes.
HEAD = ("import ray, sys; "
        "ray.init(address='local', num_cpus=2, include_dashboard=False, log_to_driver=False); "
        "print(ray.get_runtime_context().gcs_address, flush=True); sys.stdin.read()")


def _bench(*args: str, env: dict[str, str], **kw: object) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "kernelskill.cli", "bench", *args], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)  # type: ignore[call-overload]


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> dict[str, object]:
    """Run once per test session (pytest-xdist may give this module's tests to both workers)."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if worker_id != "master" else base
    saved = shared / "ray-bench.json"
    with FileLock(str(shared / "ray-bench.lock")):
        if not saved.exists():
            r = _run_bench(shared / "ray-bench")
            saved.write_text(json.dumps({**r, "out": str(r["out"])}))
    loaded = json.loads(saved.read_text())
    return {**loaded, "out": Path(loaded["out"])}


def _run_bench(tmp: Path) -> dict[str, object]:
    tmp.mkdir()
    out, cfg = tmp / "out", tmp / "cfg.toml"
    cfg.write_text("[run]\ntrials = 2\nvariants = 2\n")  # fewer trials and variants: this is about Ray
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp / "cache")}
    t0 = time.time()
    head = subprocess.Popen([sys.executable, "-c", HEAD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, env=env)
    try:
        assert head.stdout is not None
        address = head.stdout.readline().strip()
        filters = ["--filter", "level1/12_*", "--filter", "level1/14_*"]
        proc = _bench(str(ROOT / "problems"), *filters, "--device", "cpu", "--size", "small", "--rounds", "1",
                      "--out", str(out), "--config", str(cfg), "--ray", address, "--jobs", "1",
                      env={**env, "RAY_AUTH_MODE": "token"},  # as for any cluster joined by address
                      start_new_session=True)
        results, second = out / "results.jsonl", out / KEYS[1] / "log.txt"
        deadline = time.time() + 300
        while time.time() < deadline and proc.poll() is None:  # kill once the second is checkpointed
            if results.exists() and results.read_text().endswith("\n") and second.exists() \
                    and "reviewer:" in second.read_text():
                break
            time.sleep(0.2)
        if proc.poll() is not None:
            raise AssertionError(f"the bench ended before the kill: {proc.communicate()[1][-3000:]}")
        os.kill(proc.pid, signal.SIGKILL)  # the driver dies; Ray ends its tasks, their workers stop
        _, killed_err = proc.communicate()
        first = results.read_text().splitlines()
        pids = {int(m) for f in out.glob("*/*/log.txt")
                for m in re.findall(r"worker pid (\d+)", f.read_text())}
        deadline = time.time() + 60
        while time.time() < deadline and not all(_gone(p) for p in pids):
            time.sleep(0.5)
        orphans = [p for p in pids if not _gone(p)]
        for p in orphans:
            os.kill(p, signal.SIGKILL)
        resumed = _bench("--resume", "--out", str(out), "--ray", env=env)  # a local cluster this time
        table, err = resumed.communicate(timeout=400)
    finally:
        if head.stdin:
            head.stdin.close()
        head.wait(timeout=60)
    return {"out": out, "first": first, "killed_err": killed_err, "orphans": orphans, "pids": sorted(pids),
            "rc": resumed.returncode, "table": table, "err": err, "wall": time.time() - t0}


@pytest.mark.slow
def test_killed_driver_resumes_only_the_problem_in_flight(bench: dict) -> None:
    out: Path = bench["out"]
    assert bench["rc"] == 0, bench["err"][-3000:]
    assert len(bench["first"]) == 1, bench["killed_err"][-2000:]  # killed with the second in flight
    assert bench["pids"] and not bench["orphans"], "a worker outlived the killed driver"
    lines = (out / "results.jsonl").read_text().splitlines()
    assert lines[0] == bench["first"][0]
    rows = [json.loads(x) for x in lines]
    assert [r["problem"] for r in rows] == KEYS  # each exactly once, the finished one not redone
    assert "(1 already done)" in bench["err"] and "ray: a local cluster" in bench["err"]
    assert f"resuming thread {rows[1]['thread_id']}" in (out / KEYS[1] / "log.txt").read_text()
    for r in rows:
        assert r["error"] is None and r["correct"] is True and r["device"] == "cpu", r
        assert r["host"] == socket.gethostname() and r["node_id"] and r["gpu_index"] is None
    assert rows[0]["node_id"] != rows[1]["node_id"]  # the joined cluster, then the resumed run's own
    print(f"ray bench test wall time: {bench['wall']:.0f} s")


@pytest.mark.slow
def test_report_says_where_each_problem_ran(bench: dict) -> None:
    html = (bench["out"] / "report.html").read_text()
    assert "<th>ran on</th>" in html and f"ran on 1 host: {socket.gethostname()}" in html
    for key in KEYS:
        assert f'href="{key}/solution.py"' in html
    assert html.count('title="Ray node ') == 2

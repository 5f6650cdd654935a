"""`kernelskill bench --ray` usage, checked before any work and without Ray: an address that is really
a problem path, Ray not installed (one line saying how to install it), pool-only options; a result
row's placement in the report's table; and a worker that a Ray worker starts with SIGINT blocked."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from kernelskill.bench import ray_pool
from kernelskill.bench.pool import PoolError
from kernelskill.bench.records import ResultRow
from kernelskill.bench.report import placement_note, problem_table
from kernelskill.cli.main import main

SUITE = str(Path(__file__).resolve().parents[2] / "problems")


def _err(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith("kernelskill bench: ")
    return err


def test_a_path_after_ray_is_not_its_address(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _err(["bench", "--device", "cpu", "--out", str(tmp_path / "o"), "--ray", SUITE], capsys)
    assert "not a Ray address" in err and "put --ray after the problem paths" in err


def test_without_ray_it_says_how_to_install_it(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ray_pool, "ray_installed", lambda: False)
    err = _err(["bench", SUITE, "--device", "cpu", "--out", str(tmp_path / "o"), "--ray"], capsys)
    assert err.endswith("pip install 'kernelskill[ray]'")
    assert not (tmp_path / "o").exists()  # nothing started


@pytest.mark.parametrize(("extra", "needle"), [
    (["--gpus", "0"], "--gpus is for the local pool"),
    (["--server", "http://127.0.0.1:1"], "pick one"),
    (["--jobs", "0"], "--jobs must"),
])
def test_pool_only_options_are_refused(extra: list[str], needle: str, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ray_pool, "ray_installed", lambda: True)
    argv = ["bench", SUITE, "--filter", "level1/12_*", "--device", "cpu", "--out", str(tmp_path / "o"),
            *extra, "--ray"]
    assert needle in _err(argv, capsys)


def _row(**kw: object) -> ResultRow:
    return ResultRow(problem="level1/12_silu", level="level1", category="activation", path="p.py",
                     device="cuda", correct=True, thread_id="t", **kw)  # type: ignore[arg-type]


def test_the_report_says_where_each_problem_ran() -> None:
    rows = [_row(host="gpu-07", node_id="ab12", gpu_index="3"), _row(host="gpu-07", gpu_index="1"),
            _row(host="gpu-08", gpu_index="0"), _row()]
    table = problem_table(rows)
    assert '<td><span title="Ray node ab12">gpu-07 GPU 3</span></td>' in table
    assert "<td>gpu-07 GPU 1</td>" in table
    assert placement_note(rows) == "ran on 2 hosts, 3 GPUs: gpu-07 (GPU 1, 3), gpu-08 (GPU 0)"
    assert placement_note([_row()]) == ""


def test_a_worker_started_with_sigint_blocked_still_stops_on_it(tmp_path: Path) -> None:
    """A Ray worker blocks SIGINT in the thread that runs tasks, and its subprocesses inherit the
    mask: the bench worker must unblock it, or neither Ctrl-C nor its own stop on a dead parent
    (bench/worker.py) would interrupt it and run the evaluator's cleanup."""
    from kernelskill.state.config import KernelSkillConfig, run_settings

    cfg = KernelSkillConfig()
    setup = {"config": cfg.model_dump(mode="json"), "settings": run_settings(cfg).model_dump(),
             "server": None}
    proc = subprocess.Popen([sys.executable, "-m", "kernelskill.bench.worker"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}),
                            env={**os.environ, "XDG_CACHE_HOME": str(tmp_path)})
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(setup) + "\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline()) == {"ready": True}
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_an_address_where_nothing_listens_fails_at_once() -> None:
    """ray.init would retry for minutes before giving up on it."""
    with socket.socket() as s:  # a port that was free a moment ago: nothing listens there now
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(PoolError, match=f"cannot reach the cluster at 127.0.0.1:{port}: .*ray start --head"):
        ray_pool._probe(f"127.0.0.1:{port}", f"the cluster at 127.0.0.1:{port}")
    ray_pool._probe("auto", "the cluster at auto")  # found by Ray itself: nothing to probe

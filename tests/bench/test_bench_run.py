"""`kernelskill bench` end to end on the CPU: three small problems with the built-in author under
Triton's interpreter, killed after the first result and resumed; then the files it leaves are
checked against each other (results.jsonl, summary.json recomputed here, report.html)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest
from filelock import FileLock
from kernelskill.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
KEYS = ["level1/12_silu", "level1/14_hardtanh", "level2/01_linear_gelu_scale"]


def _bench(*args: str, env: dict[str, str], **kw: object) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "kernelskill.cli", "bench", *args], env=env,
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            **kw)  # type: ignore[call-overload]


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")  # a zombie has exited; init may simply not have reaped it yet


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> dict[str, object]:
    """The bench, run once per test session: pytest-xdist may hand this module's tests to both
    workers, and each would run its own ~100 s bench. The first builds it under a lock in the
    folder the workers share; the other waits (idle, leaving the CPU to it) and reads the result."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if worker_id != "master" else base
    saved = shared / "bench-run.json"
    with FileLock(str(shared / "bench-run.lock")):
        if not saved.exists():
            r = _run_bench(shared / "bench-run")
            saved.write_text(json.dumps({**r, "out": str(r["out"]), "pids": sorted(r["pids"])}))
    loaded = json.loads(saved.read_text())
    return {**loaded, "out": Path(loaded["out"]), "pids": set(loaded["pids"])}


def _run_bench(tmp: Path) -> dict[str, object]:
    tmp.mkdir()
    out = tmp / "out"
    cfg = tmp / "cfg.toml"
    cfg.write_text("[run]\ntrials = 2\nvariants = 2\n")  # fewer trials, variants: this is about the bench
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp / "cache")}
    filters = ["--filter", "level1/12_*", "--filter", "level1/14_*", "--filter", "level2/01_*"]
    t0 = time.time()
    proc = _bench(str(ROOT / "problems"), *filters, "--device", "cpu", "--size", "small", "--rounds", "1",
                  "--out", str(out), "--config", str(cfg), env=env, start_new_session=True)
    # The last problem (a GEMM chain) is the slowest after its first review, so killing then
    # reliably catches it in flight with the two earlier problems finished.
    results, second = out / "results.jsonl", out / KEYS[2] / "log.txt"
    deadline = time.time() + 400
    while time.time() < deadline and proc.poll() is None:  # kill once the last problem is checkpointed
        if results.exists() and results.read_text().endswith("\n") and second.exists() \
                and "reviewer:" in second.read_text():
            break
        time.sleep(0.2)
    os.kill(proc.pid, signal.SIGKILL)  # the bench process dies; its worker must notice and stop
    _, killed_err = proc.communicate()
    first = results.read_text().splitlines()
    pids = {int(m) for f in out.glob("*/*/log.txt") for m in re.findall(r"worker pid (\d+)", f.read_text())}
    deadline = time.time() + 60
    while time.time() < deadline and not all(_gone(p) for p in pids):
        time.sleep(0.5)
    orphans = [p for p in pids if not _gone(p)]
    for p in orphans:
        os.kill(p, signal.SIGKILL)
    resumed = _bench("--resume", "--out", str(out), env=env)
    table, err = resumed.communicate(timeout=600)
    return {"out": out, "first": first, "killed_err": killed_err, "orphans": orphans, "pids": pids,
            "rc": resumed.returncode, "table": table, "err": err, "wall": time.time() - t0}


@pytest.mark.slow
def test_killed_bench_loses_nothing_and_resume_duplicates_nothing(bench: dict) -> None:
    out: Path = bench["out"]
    assert bench["rc"] == 0, bench["err"][-3000:]
    assert len(bench["first"]) == 2, bench["killed_err"][-2000:]  # killed with the last one in flight
    assert bench["pids"] and not bench["orphans"], "the worker outlived the killed bench"
    lines = (out / "results.jsonl").read_text().splitlines()
    assert lines[:2] == bench["first"]  # rows written before the kill are kept as they were
    rows = [json.loads(x) for x in lines]
    assert sorted(r["problem"] for r in rows) == KEYS  # each problem exactly once
    assert "(2 already done)" in bench["err"]
    # The problem in flight was continued from its graph checkpoint, not started over.
    tid = next(r["thread_id"] for r in rows if r["problem"] == KEYS[2])
    assert f"resuming thread {tid}" in (out / KEYS[2] / "log.txt").read_text()
    for r in rows:
        assert r["error"] is None and r["correct"] is True and r["device"] == "cpu", r
        # at most one round: a problem with no applicable skill left spends none
        assert r["speedup_vs_eager"] is None and r["rounds"] <= 1 and r["wall_s"] > 0
        assert "class ModelNew" in (out / r["solution"]).read_text()
        assert json.loads((out / r["report"]).read_text())["thread_id"] == r["thread_id"]
    categories = [r["category"] for r in sorted(rows, key=lambda r: r["problem"])]
    assert categories == ["activation", "activation", "gemm"]


@pytest.mark.slow
def test_summary_matches_results_recomputed_independently(bench: dict) -> None:
    out: Path = bench["out"]
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    summary = json.loads((out / "summary.json").read_text())["groups"]
    assert list(summary) == ["level1", "level2", "all"]
    for group, members in (("level1", [r for r in rows if r["level"] == "level1"]),
                           ("level2", [r for r in rows if r["level"] == "level2"]), ("all", rows)):
        g = summary[group]
        n = len(members)
        assert g["problems"] == n
        assert g["correct_rate"] == pytest.approx(sum(r["correct"] for r in members) / n)
        assert g["own_kernels_rate"] == pytest.approx(sum(r["uses_own_kernels"] for r in members) / n)
        assert g["rounds_mean"] == pytest.approx(statistics.mean(r["rounds"] for r in members))
        assert g["wall_s_median"] == pytest.approx(statistics.median(r["wall_s"] for r in members))
        assert g["wall_s_total"] == pytest.approx(sum(r["wall_s"] for r in members))
        assert g["gpu_timed"] is False and g["geomean"] == {"eager": None, "compile": None}
        assert all(v is None for b in g["fast"].values() for v in b.values())  # CPU: no speedups


@pytest.mark.slow
def test_table_and_report_are_written(bench: dict) -> None:
    out: Path = bench["out"]
    table: str = bench["table"]
    assert table.splitlines()[0].split() == ["metric", "level1", "level2", "all"]
    assert "geomean vs eager" in table and "n/a" in table and "100% (3)" in table
    html = (out / "report.html").read_text()
    assert html.count("<svg") == 6
    for key in KEYS:
        assert f'href="{key}/solution.py"' in html and f'href="{key}/report.json"' in html
    print(f"bench test wall time: {bench['wall']:.0f} s")


# ---- usage errors: one line on stderr, exit code 2 ---------------------------------------------

SUITE = str(ROOT / "problems")


@pytest.mark.parametrize(("argv", "needle"), [
    (["bench", "--device", "cpu"], "no problems given"),
    (["bench", "--resume"], "--resume needs --out"),
    (["bench", "{empty}", "--device", "cpu", "--out", "{tmp}/o"], "no problem files"),
    (["bench", SUITE, "--filter", "zz*", "--device", "cpu", "--out", "{tmp}/o"], "matches none"),
    (["bench", SUITE, "--gpus", "0", "--device", "cpu", "--out", "{tmp}/o"], "--gpus needs"),
    (["bench", SUITE, "--jobs", "0", "--device", "cpu", "--out", "{tmp}/o"], "--jobs must"),
    (["bench", SUITE, "--rounds", "0", "--device", "cpu"], "--rounds must"),
    (["bench", "--resume", "--out", "{tmp}"], "not a bench folder"),
])
def test_usage_errors(argv: list[str], needle: str, tmp_path: Path,
                      capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    argv = [a.format(tmp=tmp_path, empty=tmp_path / "empty") for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and "\n" not in err and err.startswith("kernelskill bench: ")


def test_resume_refuses_other_settings_and_a_fresh_bench_refuses_a_used_folder(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "o"
    out.mkdir()
    (out / "bench.json").write_text(json.dumps({"paths": [str(ROOT / "problems")], "device": "cpu",
                                                "size": "small", "author": "builtin", "rounds": 1}))
    (out / "results.jsonl").write_text("")
    assert main(["bench", "--resume", "--out", str(out), "--rounds", "3"]) == 2
    assert "benched with rounds=1, not 3" in capsys.readouterr().err
    assert main(["bench", str(ROOT / "problems"), "--device", "cpu", "--out", str(out)]) == 2
    assert "already holds a bench" in capsys.readouterr().err


def test_a_finished_gpu_bench_resumes_on_a_cpu_machine_to_rewrite_its_report(tmp_path: Path) -> None:
    """A bench folder copied back from a GPU node: nothing is left to run, so no GPU is needed."""
    out = tmp_path / "o"
    out.mkdir()
    measured = ROOT / "problems" / "measurements" / "h200-2026-11-30" / "results.jsonl"
    row = next(json.loads(line) for line in measured.read_text().splitlines()
               if json.loads(line)["problem"] == "level1/01_matmul_square")
    (out / "results.jsonl").write_text(json.dumps(row) + "\n")
    (out / "bench.json").write_text(json.dumps({
        "paths": [str(ROOT / "problems" / "level1" / "01_matmul_square.py")], "device": "cuda",
        "size": "full", "author": "builtin", "rounds": 1}))
    assert main(["bench", "--resume", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["groups"]["all"]["problems"] == 1 and (out / "report.html").exists()


@pytest.mark.slow
def test_redo_runs_a_finished_problem_again_in_a_fresh_thread(bench: dict, tmp_path: Path) -> None:
    out = tmp_path / "copy"
    shutil.copytree(bench["out"], out)  # the module's bench stays as the other tests expect it
    env = {**os.environ, "XDG_CACHE_HOME": str(out.parent / "cache")}
    proc = _bench("--resume", "--out", str(out), "--redo", "level1/14_*", env=env)
    table, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-2000:]
    assert "(2 already done)" in err
    lines = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    redone = [r for r in lines if r["problem"] == KEYS[1]]
    assert len(lines) == 4 and len(redone) == 2
    assert redone[1]["thread_id"] == redone[0]["thread_id"] + "-redo1" and redone[1]["correct"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["groups"]["all"]["problems"] == 3  # the new row supersedes the old one


def test_redo_needs_resume_and_a_matching_glob(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", str(ROOT / "problems"), "--device", "cpu", "--redo", "x", "--out",
                 str(tmp_path / "o")]) == 2
    assert "--redo needs --resume" in capsys.readouterr().err
    out = tmp_path / "o2"
    out.mkdir()
    (out / "bench.json").write_text(json.dumps({"paths": [str(ROOT / "problems")], "device": "cpu",
                                                "size": "small", "author": "builtin", "rounds": 1}))
    assert main(["bench", "--resume", "--out", str(out), "--redo", "level9/*"]) == 2
    assert "--redo level9/* matches none" in capsys.readouterr().err

"""The run-time audit hook and the integrity check (eval/candidate/audit.py, eval/candidate/integrity.py),
both ways.

An audit hook cannot be removed, so every case runs in a fresh subprocess: a runner enters the guard,
executes the "candidate" source compiled under the candidate's file name, and prints the verdict.
Each attack is checked by its side effect (the marker file absent, the socket not connected, the
environment unchanged), not only by the verdict; each near miss does its harmless thing."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from kernelskill.eval.types import EvalResult

RUNNER = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    # What the worker has loaded (torch imports them): the events behind them are the hook's job.
    import ctypes, gc, marshal, pathlib, shutil, socket, subprocess
    from kernelskill.eval.candidate import audit
    scratch, worker, problem = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    snap = None
    if sys.argv[4] == "integrity":
        from kernelskill.eval.judge import compare
        from kernelskill.eval.candidate import integrity
        snap = integrity.Integrity()
    guard = audit.Guard(scratch, "cand.py", worker_dir=worker, problem_file=problem,
                        after=snap.verify_quick if snap else None)
    code = compile(sys.stdin.read(), "cand.py", "exec")
    out = {"check": None}
    try:
        with guard:
            exec(code, {"__name__": "_candidate_test"})
        if snap:
            snap.verify("the candidate's import")
    except audit.Violation as v:
        out = {"check": v.check, "message": str(v)}
    print(json.dumps(out))
""")


def run(tmp_path: Path, source: str, integrity: bool = False, env: dict[str, str] | None = None) -> dict:
    scratch, worker = tmp_path / "scratch", tmp_path / "worker"
    scratch.mkdir(exist_ok=True)
    worker.mkdir(exist_ok=True)
    problem = tmp_path / "problem.py"
    problem.write_text("class Model: pass\n")
    p = subprocess.run([sys.executable, "-c", RUNNER, str(scratch), str(worker), str(problem),
                        "integrity" if integrity else "audit"], input=textwrap.dedent(source),
                       capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})})
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def blocked(verdict: dict, *events: str) -> None:
    """Rejected by the audit hook on one of `events`."""
    assert verdict["check"] == "audit", verdict
    assert any(f"({e})" in verdict["message"] for e in events), verdict


def test_shell_command_does_not_run(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    blocked(run(tmp_path, f"import os\nos.system('touch {marker}')\n"), "os.system")
    assert not marker.exists()


def test_subprocess_does_not_start(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    blocked(run(tmp_path, f"import subprocess\nsubprocess.run(['touch', '{marker}'])\n"), "subprocess.Popen")
    assert not marker.exists()


def test_ctypes_cannot_call_libc(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    v = run(tmp_path, f"import ctypes\nctypes.CDLL(None).system(b'touch {marker}')\n")
    assert v["check"] == "audit" and "(ctypes." in v["message"], v
    assert not marker.exists()


def test_fork_is_refused(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    src = f"import os\nif os.fork() == 0:\n    open('{marker}', 'w').close()\n    os._exit(0)\n"
    blocked(run(tmp_path, src), "os.fork")
    assert not marker.exists()


def test_network_connection_is_not_made(tmp_path: Path) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(0.5)
    port = server.getsockname()[1]
    try:
        src = f"import socket\ns = socket.socket()\ns.connect(('127.0.0.1', {port}))\n"
        blocked(run(tmp_path, src), "socket.__new__", "socket.connect")
        with pytest.raises(TimeoutError):
            server.accept()  # nobody connected
    finally:
        server.close()


def test_user_cache_is_not_written(tmp_path: Path) -> None:
    home = tmp_path / "home"
    stats = home / ".cache" / "kernelskill" / "skill_stats.json"
    stats.parent.mkdir(parents=True)
    stats.write_text("{}")
    src = f"open('{stats}', 'w').write('{{\"gemm\": 1e9}}')\n"
    blocked(run(tmp_path, src, env={"HOME": str(home)}), "open")
    assert stats.read_text() == "{}"


def test_worker_result_file_is_not_written(tmp_path: Path) -> None:
    result = tmp_path / "worker" / "result.json"
    v = run(tmp_path, f"import pathlib\npathlib.Path('{result}').write_text('forged')\n")
    blocked(v, "open")
    assert not result.exists()


def test_file_outside_scratch_is_not_removed(tmp_path: Path) -> None:
    home = tmp_path / "home"
    keep = home / "notes.txt"
    home.mkdir()
    keep.write_text("mine")
    blocked(run(tmp_path, f"import os\nos.remove('{keep}')\n", env={"HOME": str(home)}), "os.remove")
    assert keep.exists()


def test_problem_file_cannot_be_read(tmp_path: Path) -> None:
    v = run(tmp_path, f"src = open('{tmp_path / 'problem.py'}').read()\n")
    blocked(v, "open")
    assert "must not see" in v["message"]


def test_frames_gc_and_tracebacks_are_refused(tmp_path: Path) -> None:
    blocked(run(tmp_path, "import sys\nup = sys._getframe(1).f_globals\n"), "sys._getframe")
    blocked(run(tmp_path, "import gc\nobjs = gc.get_objects()\n"), "gc.get_objects")
    tb = "try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    f = e.__traceback__.tb_frame\n"
    blocked(run(tmp_path, tb), "object.__getattr__")
    blocked(run(tmp_path, "def g():\n    yield 1\nf = g().gi_frame\n"), "object.__getattr__")


def test_trace_and_audit_hooks_are_refused(tmp_path: Path) -> None:
    v = run(tmp_path, "import sys\nsys.settrace(lambda *a: None)\n")
    blocked(v, "sys.settrace")
    blocked(run(tmp_path, "import sys\nsys.addaudithook(lambda *a: None)\n"), "sys.addaudithook")


def test_exec_and_code_objects_are_refused(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    blocked(run(tmp_path, f"exec(\"open('{marker}', 'w')\")\n"), "exec", "compile")
    assert not marker.exists()
    blocked(run(tmp_path, "def f():\n    pass\nc = f.__code__.replace(co_name='g')\n"), "object.__getattr__")
    blocked(run(tmp_path, "import marshal\nmarshal.loads(marshal.dumps(1))\n"), "marshal.loads")


def test_disallowed_fresh_import_is_refused(tmp_path: Path) -> None:
    v = run(tmp_path, "import smtplib\n")
    blocked(v, "import")
    assert "smtplib" in v["message"]


def test_environment_is_not_changed(tmp_path: Path) -> None:
    src = "import os\nos.environ['TRITON_F32_DEFAULT'] = 'tf32'\n"
    blocked(run(tmp_path, src), "os.putenv")


def test_a_caught_violation_still_rejects(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    src = f"import os\ntry:\n    os.system('touch {marker}')\nexcept BaseException:\n    pass\n"
    blocked(run(tmp_path, src), "os.system")
    assert not marker.exists()


def test_patched_timer_is_an_integrity_failure(tmp_path: Path) -> None:
    v = run(tmp_path, "import time\ntime.perf_counter = lambda: 0.0\n", integrity=True)
    assert v["check"] == "integrity" and "time.perf_counter" in v["message"], v


def test_patched_tensor_method_is_an_integrity_failure(tmp_path: Path) -> None:
    v = run(tmp_path, "import torch\ntorch.Tensor.allclose = lambda *a, **k: True\n", integrity=True)
    assert v["check"] == "integrity" and "torch.Tensor.allclose" in v["message"], v


def test_a_faked_allocator_snapshot_is_an_integrity_failure(tmp_path: Path) -> None:
    # An empty snapshot would leave every free block unpoisoned (eval/candidate/poison.py).
    src = "import torch\ntorch.cuda.memory_snapshot = lambda *a, **k: []\n"
    v = run(tmp_path, src, integrity=True)
    assert v["check"] == "integrity" and "torch.cuda.memory_snapshot" in v["message"], v


def test_replaced_evaluator_function_is_an_integrity_failure(tmp_path: Path) -> None:
    # The evaluator's comparison, replaced through its (already loaded) module: no audit event.
    src = "import torch\nimport kernelskill.eval.judge.compare as c\nc.compare = lambda *a, **k: None\n"
    v = run(tmp_path, src, integrity=True)
    assert v["check"] == "integrity" and "kernelskill.eval.judge.compare.compare" in v["message"], v


# --- near misses: what legitimate candidates and the libraries they call do ---------------------------


def test_legitimate_candidate_work_passes(tmp_path: Path) -> None:
    src = f"""
    import math
    from collections import namedtuple
    from dataclasses import dataclass
    from typing import NamedTuple, TypeVar

    import numpy as np
    import torch
    import torch.nn.functional as F
    import triton
    import triton.language as tl

    T = TypeVar("T")
    Pair = namedtuple("Pair", "a b")


    class Shape(NamedTuple):
        rows: int


    @dataclass
    class Plan:
        block: int = 128


    @triton.jit
    def double(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        m = offs < n
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)


    x = torch.ones(8)
    double[(1,)](x, 8, BLOCK=8)
    assert float(x.sum()) == 16.0
    y = F.relu(torch.randn(4)) + math.sqrt(2.0) + float(np.float32(1.0)) + Plan().block + Pair(1, 2).a
    open('{tmp_path / 'scratch' / 'notes.txt'}', 'w').write('ok')
    """
    v = run(tmp_path, src, integrity=True, env={"TRITON_INTERPRET": "1"})
    assert v["check"] is None, v
    assert (tmp_path / "scratch" / "notes.txt").read_text() == "ok"


def test_library_may_run_programs_the_candidate_may_not(tmp_path: Path) -> None:
    # torch, not the candidate, starts the process: allowed (Triton runs ptxas and a C compiler so).
    src = "import torch.utils.collect_env as ce\nout = ce.run('true')\n"
    assert run(tmp_path, src)["check"] is None


# --- through the real worker (static checks bypassed, as an attacker past them would be) --------------

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CAND = """import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, cols):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(cols))
{init}
    def forward(self, x):
{forward}
        return torch.relu(x + self.bias) * 2.0
"""


def worker_verdict(init: str = "", forward: str = "") -> EvalResult:
    from kernelskill.eval.api import _run_worker  # not at the top: the static layer is bypassed here
    from kernelskill.eval.types import EvalOptions

    pad = " " * 8
    src = CAND.format(init=textwrap.indent(init, pad), forward=textwrap.indent(forward or "pass", pad))
    opts = EvalOptions(device="cpu", size="small", trials=1, timeout_s=120, baselines=False)
    return _run_worker((FIXTURES / "relu_scale.py").read_text(), src, opts, "relu_scale.py", "cand.py",
                       EvalResult(device="cpu"))


def test_worker_rejects_a_forward_that_runs_a_command(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    r = worker_verdict(forward=f"import os\nos.system('touch {marker}')")
    assert not r.correct and r.failed_checks == ["audit"] and r.stage == "compile", (r.stage, r.reason)
    assert "os.system" in (r.reason or "") and not marker.exists()


def test_worker_rejects_a_patched_clock_as_integrity() -> None:
    r = worker_verdict(init="import time\ntime.perf_counter = lambda: 0.0")
    assert not r.correct and r.failed_checks == ["integrity"] and r.stage == "compile", (r.stage, r.reason)
    assert "time.perf_counter" in (r.reason or "")


def test_worker_accepts_the_honest_candidate() -> None:
    r = worker_verdict()
    assert r.correct, r.reason

"""The OS sandbox's process and resource layers: no process outlives the evaluation, a child
that will not end is a clean timeout, files are bounded, and the sandbox costs little per child.
Each test checks the side effect (the process gone from /proc, the file's size)."""

from __future__ import annotations

import secrets
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from kernelskill.eval.child import run_child, stop_all
from kernelskill.eval.sandbox import layers as S
from sandbox_util import LAYERS, alive_with, child

pytestmark = pytest.mark.usefixtures("sandbox_child_on_path")


ESCAPES = """
import os, subprocess, sys, time
tok = REQUEST['token']
sleeper = [sys.executable, '-c', 'import time; time.sleep(120)']
subprocess.Popen(sleeper + [tok + '-session'], start_new_session=True)
os.system(f"{sys.executable} -c 'import time; time.sleep(120)' {tok}-shell &")
if os.fork() == 0:  # double fork, new session, environment wiped: the token cannot mark it
    os.setsid()
    if os.fork() == 0:
        os.execve(sys.executable, sleeper + [tok + '-double'], {})
    os._exit(0)
time.sleep(0.5)
print('SPAWNED', flush=True)
"""


def _escapes_die(stall: bool) -> None:
    token = secrets.token_hex(8)
    code = ESCAPES + ("time.sleep(60)\n" if stall else "")
    run = run_child("sandbox_child", {"code": code, "token": token}, "cpu", 3.0 if stall else 20.0)
    assert "SPAWNED" in run.log_tail, run.log_tail
    assert run.timed_out == stall
    assert alive_with(token) == []


@pytest.mark.parametrize("stall", [False, True], ids=["child exits", "child times out"])
def test_no_process_outlives_the_evaluation(stall: bool) -> None:
    _escapes_die(stall)


@pytest.mark.parametrize("stall", [False, True], ids=["child exits", "child times out"])
def test_without_namespaces_the_supervisor_still_kills_every_descendant(
        monkeypatch: pytest.MonkeyPatch, stall: bool) -> None:
    # (not root: the capabilities a child would drop are those of a user namespace, not made here)
    plain = S.Layers(uid=LAYERS.uid, drop_caps=LAYERS.drop_caps and not LAYERS.userns,
                     missing={"pid": "test"})
    monkeypatch.setattr(S, "probe", lambda: plain)
    _escapes_die(stall)


@pytest.mark.parametrize("code", [
    "import os, signal\nos.kill(os.getpid(), signal.SIGSTOP)",
    "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nwhile True: time.sleep(1)",
    "while True: pass",
    "import sys\nwhile True: sys.stdout.write('flood ' * 10000)",
], ids=["sigstop", "ignores sigterm", "busy loop", "output flood"])
def test_a_child_that_will_not_end_is_a_clean_timeout_or_crash(code: str) -> None:
    started = time.time()
    run = child(code, timeout_s=2.0)
    # A flood may also end early: at 256 MiB of log the write fails (RLIMIT_FSIZE).
    assert run.payload is None and (run.timed_out or run.returncode != 0 and "flood" in code), run
    assert time.time() - started < 6.0  # 2 s budget + teardown, never a hang
    assert len(run.log_tail) <= 3000


def test_files_and_the_log_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(S, "FSIZE_BYTES", 1 << 20)
    run = child("""
import resource, signal
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # else the kernel kills us at the limit
print('LIMITS', [resource.getrlimit(getattr(resource, r))[0] for r in ('RLIMIT_CORE', 'RLIMIT_FSIZE')])
try:
    with open('big', 'wb') as f:
        for _ in range(4):
            f.write(b'x' * (1 << 20))
except OSError as e:
    print('stopped', e.errno)
import os
print('SIZE', os.path.getsize('big'))
""")
    assert "LIMITS [0, 1048576]" in run.log_tail and "SIZE 1048576" in run.log_tail, run.log_tail


def test_address_space_is_bounded_on_cpu_only() -> None:
    cpu, cuda = S.rlimits("cpu", 10), S.rlimits("cuda", 10)
    assert "RLIMIT_AS" in cpu and "RLIMIT_AS" not in cuda  # CUDA reserves huge virtual ranges
    assert cpu["RLIMIT_CPU"][0] > 10 and cpu["RLIMIT_NOFILE"][0] <= S.NOFILE


def test_sandbox_adds_well_under_a_second_per_child(tmp_path: Path) -> None:
    def best(fn) -> float:
        times = []
        for _ in range(3):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
        return min(times)

    bare = best(lambda: subprocess.run([sys.executable, "-c", "pass"], check=True))
    boxed = best(lambda: child("pass"))
    assert boxed - bare < 0.5, (bare, boxed)


@pytest.mark.parametrize("plain", [False, True], ids=["probed layers", "no namespaces"])
def test_the_child_dies_with_an_evaluator_that_dies_without_ending_it(tmp_path: Path, plain: bool) -> None:
    token = secrets.token_hex(8)
    evaluator = f"""
import os, sys
from pathlib import Path
from kernelskill.eval.sandbox import layers as S
if {plain!r}:
    S.probe = lambda: S.Layers()
run = S.sandboxed_popen([sys.executable, '-c', 'import time; time.sleep(120)', {token!r}],
                        Path({str(tmp_path)!r}), 'cpu', timeout_s=120)
print(run.proc.pid, flush=True)
os._exit(0)  # killed, as it were: no kill_all, no finally
"""
    out = subprocess.run([sys.executable, "-c", evaluator], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip().isdigit(), out.stderr
    deadline = time.time() + 5
    while alive_with(token) and time.time() < deadline:
        time.sleep(0.05)
    assert alive_with(token) == []




def test_stop_all_ends_a_running_child_from_another_thread_and_its_scratch_folder_goes() -> None:
    """An error or Ctrl-C on one thread while another waits on a child (optimize's reference check
    runs beside the author's set-up): stop_all ends the child at once, and the waiting thread
    removes the scratch folder before anything else exits (none left for the interpreter's exit
    to race a child still writing into it)."""
    token = secrets.token_hex(8)
    code = (f"import subprocess, sys, time\nprint('SCRATCH', SCRATCH, flush=True)\n"
            f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)', {token!r}])\n"
            "i = 0\nwhile True:\n    (SCRATCH / f'f{i % 50}').write_text('x' * 1000)\n"
            "    i += 1\n    time.sleep(0.005)\n")
    runs: list = []
    waiter = threading.Thread(target=lambda: runs.append(
        run_child("sandbox_child", {"code": code}, "cpu", 60.0)), daemon=True)
    waiter.start()
    deadline = time.time() + 30
    while not alive_with(token) and time.time() < deadline:
        time.sleep(0.05)
    assert alive_with(token), "the child never started its sleeper"
    stopped = time.time()
    stop_all()
    waiter.join(10)
    assert not waiter.is_alive() and time.time() - stopped < 6.0
    run = runs[0]
    assert not run.timed_out and run.payload is None, run
    assert alive_with(token) == []
    scratch = next(ln.split(" ", 1)[1] for ln in run.log_tail.splitlines() if ln.startswith("SCRATCH "))
    assert not Path(scratch).exists(), scratch

"""The OS sandbox around the evaluator's children (eval/sandbox/layers.py): what a child can see and touch.

Static checks would reject these programs before they run, so they go straight to the layer
under test (sandbox_util.child: run_child with a child that execs the request's code). Every
test checks the side effect (the file unchanged, the connection never accepted, the secret not
printed), and is skipped with the reason where this host lacks the layer.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from kernelskill.eval.child import ChildRun
from kernelskill.eval.sandbox import layers as S
from kernelskill.eval.sandbox.env import CHILD_USER
from kernelskill.eval.sandbox.report import report
from sandbox_util import LAYERS, NO_OWN_POWERS, child, child_cleaning, needs

pytestmark = pytest.mark.usefixtures("sandbox_child_on_path")


@NO_OWN_POWERS
@pytest.mark.parametrize("plain", [False, True], ids=["probed layers", "no namespaces"])
def test_no_secret_of_the_parent_is_visible(monkeypatch: pytest.MonkeyPatch, plain: bool) -> None:
    if plain:
        if not LAYERS.active() & {"uid", "caps"}:
            pytest.skip("without namespaces only another uid or dropped capabilities guard /proc")
        if LAYERS.userns:
            pytest.skip("not root: the capabilities a child drops are its user namespace's")
        monkeypatch.setattr(S, "probe", lambda: S.Layers(uid=LAYERS.uid, drop_caps=LAYERS.drop_caps))
    secrets_env = {"DATABASE_URL": "postgres://admin:s3cret-db@host/db",  # no old marker
                   "OPENAI_API_KEY": "sk-s3cret-key", "CUDA_AUTH_TOKEN": "s3cret-cuda"}  # allowed prefix
    for k, v in secrets_env.items():
        monkeypatch.setenv(k, v)
    # /proc/PID/environ shows a process's environment at its start: this one holds the secrets
    # from its start, as the evaluator's own process would.
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=dict(os.environ))
    try:
        run = child("""
import os
seen = [k for k, v in os.environ.items() if 's3cret' in v]
for pid in os.listdir('/proc'):  # every process's environment, the evaluator's included
    try:
        if b's3cret' in open(f'/proc/{pid}/environ', 'rb').read():
            seen.append(pid)
    except OSError:
        pass
print('SEEN', seen, 'HOME', os.environ['HOME'] == os.getcwd())
""")
    finally:
        holder.kill()
        holder.wait()
    assert "SEEN [] HOME True" in run.log_tail, run.log_tail
    assert "s3cret" not in run.log_tail


def test_environment_is_an_allowlist_with_home_in_scratch_and_shared_compile_caches(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SOME_TOOL_SETTING", "x")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    env = S.child_env("cpu", tmp_path / "scratch", "tok")
    assert "SOME_TOOL_SETTING" not in env and env[S.TOKEN_VAR] == "tok"
    assert env["PYTHONPATH"] == os.environ["PYTHONPATH"]
    assert env["TRITON_INTERPRET"] == "1" and env["CUDA_VISIBLE_DEVICES"] == ""
    for name in ("HOME", "TMPDIR", "XDG_CACHE_HOME"):
        assert env[name].startswith(str(tmp_path / "scratch")), name
    for name in ("TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR"):  # kept across evaluations
        assert env[name].startswith(str(tmp_path / "xdg" / "kernelskill-compile")), name
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert "TRITON_INTERPRET" not in S.child_env("cuda", tmp_path)


def test_a_child_has_a_user_name_without_a_passwd_entry(tmp_path: Path) -> None:
    """The baseline process runs under a uid with no passwd entry; Inductor asks getpass for the
    user name at import, which there raised KeyError and failed torch.compile (H100, 2026-12-06)."""
    env = S.child_env("cpu", tmp_path)
    out = subprocess.run([sys.executable, "-c", "import getpass; print(getpass.getuser())"], env=env,
                         capture_output=True, text=True, check=True).stdout.strip()
    assert out == CHILD_USER


# ---- files ------------------------------------------------------------------------------
@needs("mount")
def test_credentials_and_the_kernelskill_cache_are_neither_readable_nor_writable(
        monkeypatch: pytest.MonkeyPatch, shared_dir: Callable[[], Path]) -> None:
    home, xdg = shared_dir(), shared_dir()
    files = {home / ".netrc": "machine api password hunter2-netrc\n",
             home / ".ssh" / "id_ed25519": "hunter2-ssh\n",
             home / ".cache" / "kernelskill" / "skill_stats.json": '{"hunter2": 1}\n',
             xdg / "kernelskill" / "ceilings.json": '{"hunter2-gpu": {}}\n'}
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(xdg))
    paths = [str(p) for p in files]
    run = child(f"""
for p in {paths!r}:
    try:
        print('READ', open(p).read())
    except OSError as e:
        print('no read', type(e).__name__)
    try:
        open(p, 'a').write('tampered')
    except OSError as e:
        print('no write', type(e).__name__)
for d in {[str(home / ".cache" / "kernelskill"), str(xdg / "kernelskill")]!r}:
    try:
        open(d + '/planted.json', 'w').write('{{}}')
    except OSError as e:
        print('no plant', type(e).__name__)
""")
    assert "hunter2" not in run.log_tail, run.log_tail
    assert run.log_tail.count("no plant") == 2, run.log_tail  # (a hidden file reads empty: /dev/null)
    for path, text in files.items():
        assert path.read_text() == text, path
    assert not (home / ".cache" / "kernelskill" / "planted.json").exists()
    assert not (xdg / "kernelskill" / "planted.json").exists()


@needs("mount")
def test_project_tree_and_tmp_are_out_of_reach(tmp_path: Path) -> None:
    token = secrets.token_hex(8)
    project = Path(S.__file__).resolve().parent / f"planted-{token}.py"
    outside = tmp_path / "outside.txt"  # /tmp of the parent: the child's /tmp is its own
    outside.write_text("parent's file\n")
    run = child_cleaning(project, f"""
import os
for p in ({str(project)!r}, {str(outside)!r}):
    try:
        open(p, 'a').write('x')
        print('WROTE', p)
    except OSError as e:
        print('refused', type(e).__name__)
print('SEES_OUTSIDE', os.path.exists({str(outside)!r}))
""")
    assert "WROTE" not in run.log_tail and "SEES_OUTSIDE False" in run.log_tail, run.log_tail
    assert not project.exists() and outside.read_text() == "parent's file\n"


# ---- network ----------------------------------------------------------------------------
@needs("net")
def test_no_connection_reaches_a_listener_on_loopback() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        run = child(f"""
import socket
try:
    socket.create_connection(('127.0.0.1', {port}), timeout=2).sendall(b'leak')
    print('CONNECTED')
except OSError as e:
    print('refused', e)
""")
        listener.settimeout(0.5)
        with pytest.raises(TimeoutError):
            listener.accept()
    assert "CONNECTED" not in run.log_tail and "refused" in run.log_tail, run.log_tail


# ---- processes --------------------------------------------------------------------------
@needs("caps")
def test_root_child_holds_no_capability() -> None:
    run = child("print([l for l in open('/proc/self/status') if l.startswith(('CapEff', 'CapBnd'))])")
    assert "CapEff:\\t0000000000000000" in run.log_tail and "CapBnd:\\t0000000000000000" in run.log_tail, \
        run.log_tail


# ---- what must keep working --------------------------------------------------------------
def test_a_legitimate_child_works() -> None:
    run = child("""
import tempfile, torch
(SCRATCH / 'out.txt').write_text('written')
with tempfile.NamedTemporaryFile() as f:  # TMPDIR: the scratch folder
    in_scratch = f.name.startswith(str(SCRATCH))
x = torch.arange(6.0).reshape(2, 3)
print('OK', sorted(REQUEST), (SCRATCH / 'out.txt').read_text(), in_scratch, float((x @ x.T).sum()))
""")
    assert run.returncode == 0 and not run.timed_out, run.log_tail
    assert "OK ['code'] written True 83.0" in run.log_tail, run.log_tail


def test_the_child_never_writes_the_users_gpu_ceilings(monkeypatch: pytest.MonkeyPatch,
                                                       shared_dir: Callable[[], Path]) -> None:
    xdg = shared_dir()
    monkeypatch.setenv("XDG_CACHE_HOME", str(xdg))
    run = child("""
import torch
from kernelskill.eval.timing import roofline
torch.cuda.get_device_name = lambda *a: 'FakeGPU'  # as if measured on a GPU, on this CPU
roofline.measure_ceilings = lambda: roofline.Ceilings('FakeGPU', 1.0, 1.0, 0.0, 1.0, 1.0)
print('CACHE', roofline.cache_dir(), roofline.load_ceilings().gpu)
""")
    assert "CACHE /" in run.log_tail and "kernelskill-eval-" in run.log_tail, run.log_tail
    assert str(xdg) not in run.log_tail
    assert not (xdg / "kernelskill" / "ceilings.json").exists()


def test_report_has_one_line_per_layer() -> None:
    lines = report()
    assert [ln.split()[0] for ln in lines] == ["env", "net", "pid", "mount", "uid", "caps", "seccomp",
                                              "rlimits", "boundary"]
    assert all(ln.split()[1] in ("active:", "missing:", "off:") for ln in lines)
    assert json.dumps(lines)  # plain text, printable as is


def test_ceilings_are_measured_by_a_trusted_child_and_written_by_the_parent(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from kernelskill.eval.timing import ceilings

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user"))
    monkeypatch.setattr(ceilings, "_measured", False)
    entry = {"gpu": "FakeGPU", "bandwidth_gbs": 1.0, "fp32_tflops": 1.0, "measured_at": 0.0}
    calls = []

    def fake_run(module: str, request: dict, device: str, timeout_s: float) -> ChildRun:
        calls.append((module, request))
        return ChildRun({"gpu": "FakeGPU", "entry": entry}, "done", "", False, 0, 0.1)

    scratch = tmp_path / "scratch"
    table = ceilings.prepare(scratch, fake_run)
    assert calls == [(ceilings.MODULE, {"table": {}})]  # nothing cached yet: measured, trusted
    assert table == {"FakeGPU": entry} == ceilings.read_table(ceilings.user_path())
    assert ceilings.read_table(ceilings.scratch_path(scratch)) == table  # the child's copy
    ceilings.scratch_path(scratch).write_text('{"FakeGPU": {}, "PlantedGPU": {}}')
    ceilings.after(scratch, table, fake_run)  # a gained name is a hint, never copied back
    assert ceilings.read_table(ceilings.user_path()) == {"FakeGPU": entry}
    assert len(calls) == 1  # at most one trusted measurement per process


def _block_devices() -> int:
    import stat

    return sum(stat.S_ISBLK(os.lstat(os.path.join(r, f)).st_mode)
               for r, _, fs in os.walk("/dev") if not r.startswith("/dev/shm") for f in fs)


@needs("mount")
def test_raw_disks_and_kernel_knobs_are_out_of_reach() -> None:
    if not _block_devices():
        pytest.skip("this host shows no block device under /dev")
    run = child("""
import os, stat
disks = sum(stat.S_ISBLK(os.lstat(os.path.join(r, f)).st_mode)
            for r, _, fs in os.walk('/dev') if not r.startswith('/dev/shm') for f in fs)
knobs = []
for p in ('/proc/sys/kernel/core_pattern', '/sys/kernel/mm/transparent_hugepage/enabled'):
    try:
        os.close(os.open(p, os.O_WRONLY))  # opened, nothing written
        knobs.append(p)
    except OSError:
        pass
print('DISKS', disks, 'WRITABLE', knobs)
""")
    assert "DISKS 0 WRITABLE []" in run.log_tail, run.log_tail


@needs("mount")
def test_host_unix_sockets_under_run_are_unreachable_and_nvidia_folders_stay() -> None:
    if not os.access("/run", os.W_OK):
        pytest.skip("/run is not writable here: no socket to plant")
    tag = secrets.token_hex(6)
    sock_path, nvidia = Path(f"/run/kernelskill-test-{tag}.sock"), Path(f"/run/nvidia-kernelskill-test-{tag}")
    nvidia.mkdir()
    (nvidia / "socket-ish").write_text("driver daemon\n")
    try:
        with socket.socket(socket.AF_UNIX) as listener:
            listener.bind(str(sock_path))
            listener.listen(1)
            run = child(f"""
import socket
try:
    socket.socket(socket.AF_UNIX).connect({str(sock_path)!r})
    print('CONNECTED')
except OSError as e:
    print('refused', type(e).__name__)
print('NVIDIA', open({str(nvidia / "socket-ish")!r}).read().strip())
""")
            listener.settimeout(0.5)
            with pytest.raises(TimeoutError):
                listener.accept()
    finally:
        sock_path.unlink(missing_ok=True)
        shutil.rmtree(nvidia)
    assert "refused" in run.log_tail and "NVIDIA driver daemon" in run.log_tail, run.log_tail


@needs("mount")
def test_the_home_shows_only_what_the_child_imports_from(monkeypatch: pytest.MonkeyPatch,
                                                         shared_dir: Callable[[], Path]) -> None:
    home = shared_dir()
    (home / "notes").mkdir()
    (home / "notes" / "passwords.txt").write_text("hunter2-notes\n")  # on no list of known names
    (home / ".cache" / "huggingface").mkdir(parents=True)
    (home / ".cache" / "huggingface" / "token").write_text("hunter2-hf\n")
    (home / "lib").mkdir()
    (home / "lib" / "helper_mod.py").write_text("VALUE = 'imported from home'\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(home / "lib"), os.environ["PYTHONPATH"]]))
    # As the baseline process: a role that keeps the shared compile caches, under the home here,
    # and /dev/shm as it is (the judge's is its own).
    run = child(role="baseline", code=f"""
import os, helper_mod
print(helper_mod.VALUE, sorted(os.listdir({str(home)!r})), os.listdir({str(home / ".cache")!r}))
for p in ('notes/passwords.txt', '.cache/huggingface/token'):
    try:
        print(open(os.path.join({str(home)!r}, p)).read())
    except OSError as e:
        print('hidden', type(e).__name__)
""")
    # The shared compile caches (kernelskill-compile) are the one other thing left in it.
    assert "imported from home ['.cache', 'lib'] ['kernelskill-compile']" in run.log_tail, run.log_tail
    assert run.log_tail.count("hidden FileNotFoundError") == 2 and "hunter2" not in run.log_tail


@needs("mount")
def test_the_compile_caches_stay_writable_and_persist_while_the_rest_is_read_only(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Triton's and Inductor's caches outlive one evaluation (no recompiling, no re-autotuning of
    the baselines' kernels) for the roles that run no candidate code (a candidate process may not
    write them: test_boundary.py); the user's kernelskill state next to them stays out of reach."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    state = tmp_path / "xdg" / "kernelskill" / "skill_stats.json"
    state.parent.mkdir(parents=True)
    state.write_text("{}")
    run = child(role="baseline", code=f"""
import os
from pathlib import Path
for var in ("TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR"):
    (Path(os.environ[var]) / "entry").write_text("compiled")
try:
    Path({str(state)!r}).write_text("planted")
    print("STATE WRITTEN")
except OSError as e:
    print("STATE REFUSED", type(e).__name__)
""")
    assert "STATE REFUSED" in run.log_tail, run.log_tail
    assert state.read_text() == "{}"
    for path in S.compile_caches().values():
        assert (path / "entry").read_text() == "compiled"

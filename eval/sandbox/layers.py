"""The OS sandbox around every child that runs candidate code: one call to start it, one to end it.

    run = sandboxed_popen(cmd, scratch, device, timeout_s=T, stdin=PIPE, stdout=log, stderr=STDOUT)
    ... run.proc.communicate(...) ...
    kill_all(run)            # always, in a finally: nothing the child started outlives this
    run.returncode()         # the child's own exit code (-N: killed by signal N)

Layers, each probed once per process (`probe()`), each degrading with one warning line when the
host lacks it (`report.report()`, `kernelskill eval --sandbox-report`, lists them):
- env: an allowlisted environment (no secret of the evaluator), HOME, TMPDIR and the caches in
  the scratch folder, a per-run token that marks every process of the run.
- net / pid / mount: Linux namespaces through util-linux `unshare`: no network (a down
  loopback only); a PID namespace whose end kills every descendant; every mount read-only, the
  user's home empty but for the folders the child imports from, credential and cache paths
  hidden, /run without its sockets, a private /tmp (but for the import folders that live there),
  only the scratch folder writable. Which paths are hidden and kept: paths.py.
- uid / caps / seccomp: by role (env.ROLES): a candidate runs under another uid, or as uid 0
  without capabilities, and under seccomp.py's filter; the judge keeps the caller's identity.
- rlimits: core, open files, file size, CPU time, address space on 'cpu', processes per uid.
The supervisor (supervisor.py) reaps and kills what the child leaves; the parent's wall clock
kills the supervisor's namespace, session and every process carrying the run's token.
"""

from __future__ import annotations

import contextlib
import functools
import os
import resource
import secrets
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from .env import CACHE_VAR, ROLES, TOKEN_VAR, Role, child_env, compile_caches, private_caches
from .host_probe import probe_layers
from .spec import INIT, Layers, child_spec

__all__ = ["TOKEN_VAR", "Layers", "child_env", "compile_caches"]

LAYERS_VAR, FSIZE_VAR = "KERNELSKILL_SANDBOX_LAYERS", "KERNELSKILL_SANDBOX_FSIZE"
"""The parent's probe and file-size limit, handed to its judge: it sandboxes its candidate without
re-probing, under the limit its parent has (tests lower FSIZE_BYTES); read only in a judge."""


# Rationale: the largest file a legitimate child writes is a Kineto trace of one forward (a few
# MB) or a compiled kernel cache entry; 256 MiB bounds the log and every file at 100x that.
FSIZE_BYTES = 256 << 20
NOFILE = 4096
NPROC = 4096  # threads count too: torch starts one per core, and Triton's compiler a few


@functools.cache
def probe() -> Layers:
    """Which layers this host allows; each tried for real once per process (~0.1 s), or handed
    down by the evaluator that started this process (a judge: LAYERS_VAR). A caller who is not
    root gets the namespaces through a user namespace of its own, where the host allows one."""
    if handed := os.environ.get(LAYERS_VAR):
        with contextlib.suppress(ValueError, KeyError, TypeError):
            return Layers.from_json(handed)
    return probe_layers(userns=os.geteuid() != 0)


def rlimits(device: str, timeout_s: float | None, role: Role = ROLES["child"]) -> dict[str, tuple[int, int]]:
    """The child's resource limits. CPU seconds count every thread, hence x cores; it is a
    backstop: the parent's wall clock ends the run first. The judge has no file-size limit: its
    inputs live in shared-memory files as large as the problem's tensors (a 2 GiB input failed
    with EFBIG), and the candidate writes no file of the judge's."""
    cpu = int((timeout_s or 3600) * (os.cpu_count() or 1)) + 60
    lim = {"RLIMIT_CORE": (0, 0), "RLIMIT_CPU": (cpu, cpu + 5)}
    if role.file_size_limit:
        fsize = int(os.environ.get(FSIZE_VAR, FSIZE_BYTES) if os.environ.get(LAYERS_VAR) else FSIZE_BYTES)
        lim["RLIMIT_FSIZE"] = (fsize, fsize)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    n = min(NOFILE, hard) if hard != resource.RLIM_INFINITY else NOFILE
    lim["RLIMIT_NOFILE"] = (n, n)
    if device == "cpu":
        # Rationale: a CPU evaluation peaked at 0.83 GiB of address space (relu_scale, small
        # sizes, baselines on, 2 cores: torch, Triton's interpreter, thread stacks); a child may
        # reserve up to the machine's RAM (8 GiB at least), never enough to swap the host out.
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        lim["RLIMIT_AS"] = (max(ram, 8 << 30), max(ram, 8 << 30))
    if probe().uid is not None and role.uid is not None:
        lim["RLIMIT_NPROC"] = (NPROC, NPROC)
    return {k: _within(k, int(s), int(h)) for k, (s, h) in lim.items()}


def _within(name: str, soft: int, hard: int) -> tuple[int, int]:
    """(soft, hard) no higher than this process's own hard limit: raising one needs
    CAP_SYS_RESOURCE, which a judge (itself limited) or a container's root may lack."""
    ours = resource.getrlimit(getattr(resource, name))[1]
    if ours == resource.RLIM_INFINITY:
        return soft, hard
    return min(soft, ours), min(hard, ours)


_warned = False


def _warn_once(layers: Layers) -> None:
    global _warned
    gaps = [k for k, why in layers.missing.items() if not why.startswith("not ")]
    if gaps and not _warned:
        _warned = True
        print(f"kernelskill: sandbox layers missing on this host: {', '.join(gaps)} "
              "(`kernelskill eval --sandbox-report` says why)", file=sys.stderr)


@dataclass
class SandboxRun:
    """A started sandboxed child: its supervisor's process, its token, its two pipes."""

    proc: subprocess.Popen
    token: str
    layers: Layers
    status_r: int
    lifeline_w: int
    """Closing it (kill_all, or this process dying) ends the child and all it started."""
    status: str = ""
    said: str = ""
    """What the status pipe carried before the exit status: answers to pauses (eval/sandbox/pause.py)."""

    def returncode(self) -> int:
        """The child's own exit code (negative: the signal that killed it), as Popen reports."""
        if not self.status and self.status_r >= 0:
            with contextlib.suppress(OSError):
                self.said += os.read(self.status_r, 256).decode()
            os.close(self.status_r)
            self.status_r = -1
            # The exit status is the supervisor's last line; a pause's answer may come before it.
            self.status = next((w for w in reversed(self.said.split()) if w.lstrip("-").isdigit()), "")
        if self.status.lstrip("-").isdigit() and int(self.status) >= 0:
            return os.waitstatus_to_exitcode(int(self.status))
        return self.proc.returncode if self.proc.returncode is not None else -signal.SIGKILL


def sandboxed_popen(cmd: list[str], scratch: Path, device: str, *, timeout_s: float | None = None,
                    extra_env: dict[str, str] | None = None, reference_only: bool = False,
                    role: str = "child", **popen_kwargs: object) -> SandboxRun:
    """Start `cmd` in the sandbox as `role` (ROLES), cwd `scratch` (the one folder it may write);
    `popen_kwargs` are stdin/stdout/stderr and the like. The caller must end it with kill_all(run),
    whatever happens, and may wait on run.proc meanwhile. `reference_only`: the child runs only the
    user's reference (the up-front check) and prints no missing-layers warning (one-line errors)."""
    layers = probe()
    who = ROLES[role]
    if not reference_only:
        _warn_once(layers)
    token = secrets.token_hex(16)
    uid, _ = layers.identity(who)
    if uid is not None:
        for p in [scratch, *scratch.rglob("*")]:
            os.chown(p, uid, uid)
    env = child_env(device, scratch, token) | (extra_env or {})
    if not who.shared_caches:  # compile caches of its own: nothing it writes reaches another run
        env.update({k: str(v) for k, v in private_caches(scratch).items()})
        env.pop(CACHE_VAR, None)
    if role == "judge":  # it sandboxes its own candidate the way this host allows, unprobed
        env[LAYERS_VAR], env[FSIZE_VAR] = layers.to_json(), str(FSIZE_BYTES)
    status_r, status_w = os.pipe()
    lifeline_r, lifeline_w = os.pipe()
    os.set_blocking(status_r, False)
    spec = child_spec(layers, str(scratch), status_w, rlimits(device, timeout_s, who),
                 "mount" in layers.namespaces, lifeline_r, env, who)
    argv = [*layers.unshare_prefix(), sys.executable, "-I", "-S", INIT, spec, "--", *cmd]
    fds = (status_w, lifeline_r, *popen_kwargs.pop("pass_fds", ()))
    try:
        proc = subprocess.Popen(argv, cwd=scratch, env=env, start_new_session=True, pass_fds=fds,
                                **popen_kwargs)
    except BaseException:
        os.close(status_r)
        os.close(lifeline_w)
        raise
    finally:
        os.close(status_w)
        os.close(lifeline_r)
    return SandboxRun(proc, token, layers, status_r, lifeline_w)


_LIFELINES = threading.Lock()


def cut_lifeline(run: SandboxRun) -> None:
    """Close the run's lifeline once (safe from any thread): its supervisor then kills the child
    and everything it started, and the thread waiting on run.proc sees it end."""
    with _LIFELINES:  # two threads must not close one fd number twice (the second could be reused)
        fd, run.lifeline_w = run.lifeline_w, -1
    if fd >= 0:
        os.close(fd)


def kill_all(run: SandboxRun) -> None:
    """End the child and everything it started: the supervisor first (it kills its descendants
    or, as a PID namespace's init, takes them with it), then the session, then any process still
    carrying the run's token. Returns once the supervisor is reaped."""
    p = run.proc
    cut_lifeline(run)  # the supervisor kills the child and reaps its descendants
    if p.poll() is None and "pid" in run.layers.namespaces:
        with contextlib.suppress(ProcessLookupError):
            p.send_signal(signal.SIGKILL)  # the namespace dies with `unshare`: no need to wait
    if p.poll() is None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(timeout=2)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(p.pid, signal.SIGKILL)
    for _ in range(50):
        if not _kill_marked(run.token):
            break
        time.sleep(0.01)
    p.wait()
    run.returncode()  # read the status before the pipe's buffer could be lost


def _kill_marked(token: str) -> int:
    """SIGKILL every live process whose environment carries the run's token; how many."""
    mark, n = f"{TOKEN_VAR}={token}".encode(), 0
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                if mark not in f.read():
                    continue
            os.kill(int(name), signal.SIGKILL)
            n += 1
        except OSError:
            continue
    return n


def no_block(path: str, flags: int) -> int:
    """An opener for files the child may have replaced: a FIFO does not block, a link fails."""
    return os.open(path, flags | os.O_NONBLOCK | os.O_NOFOLLOW)


def read_capped(path: Path, cap: int) -> str:
    """At most `cap` bytes of a file in the child's scratch folder; '' when unreadable."""
    try:
        with open(path, "rb", opener=no_block) as f:
            return f.read(cap).decode(errors="replace")
    except OSError:
        return ""

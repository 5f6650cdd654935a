"""Child processes of the evaluator: started in the sandbox, handed a signing key and a request,
believed only through a signed result, killed with everything they started.

    python -P -m MODULE REQUEST RESULT PROGRESS      (the key arrives on stdin)

`run_child` is the one call. A child may also be started *before* its request exists (a spare
judge, `spare_judges`): it spends the seconds of its start-up (interpreter, torch, its candidate
process, torch.compile's imports) while the caller is still writing the next candidate, and its
request arrives later on the same stdin. On the GPU the spare starts as its evaluation's judge
takes the last one, held before it touches the GPU (its CUDA context) and starts torch.compile's
imports until that evaluation is over (FREE on its stdin): its interpreter, torch and candidate
process start beside the judge's first stages, and the judge's timing stage waits until that
start-up is over (PARKED; the judge's stdin closed only then, eval/judge/parent_pipe.py), so no second
context and no import run beside a timed run; on the CPU it starts once the evaluation is over, as
the interpreter's work and the start-up would share the host's few cores. Why a spare and not one
judge kept alive across evaluations: a fresh process per evaluation keeps every evaluation
independent of the last one (no state, no leaked memory, no half-dead CUDA context), and the startup
is most of what a kept-alive judge would save (3-5 s of a ~20 s evaluation on an H200,
2026-12-02, problems/measurements/h200-2026-12-02-cost/).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .judge.main import FREE, GO, PARKED, SPARE_FLAG
from .judge.tuning import seed
from .sandbox import layers as sandbox
from .sandbox.env import ROLES, private_caches
from .sandbox.signing import verify
from .timing import ceilings

RESULT_CAP = 16 << 20  # bytes of a result file read back; a real one is a few kB
JUDGE = "kernelskill.eval.judge.main"
EARLY_SPARE_DEVICES = ("cuda",)
"""Devices whose next spare starts with an evaluation, held off the GPU until it ends (above)."""
# Rationale: a spare's start-up takes 3-4 s on an H100 host; an evaluation's timing waits for it at
# most this long (eval/judge/parent_pipe.py), polled often enough to cost a timing stage little.
PARK_CAP_S, PARK_POLL_S = 20.0, 0.02


@dataclass
class ChildRun:
    """What a child process left: its signed payload (None when it wrote none we can believe)."""

    payload: dict | None
    stage: str
    """The last stage the child wrote to its PROGRESS file."""
    log_tail: str
    timed_out: bool
    returncode: int
    elapsed_s: float

    def crash_reason(self) -> str:
        """'(exit code N): last log line' or '(signal SIGSEGV): ...', for a one-line error."""
        why = f"exit code {self.returncode}" if self.returncode >= 0 else \
            f"signal {signal.Signals(-self.returncode).name}"
        last = self.log_tail.strip().splitlines()[-1][:300] if self.log_tail.strip() else "no output"
        return f"({why}): {last}"


@dataclass
class _Started:
    """A child running in its scratch folder `tmp`, its key already sent; `finish` hands it the
    request (when it did not have it at start) and collects its verdict."""

    device: str
    timeout_s: float
    tmp: tempfile.TemporaryDirectory
    run: sandbox.SandboxRun
    key: bytes
    spare: bool
    table: dict = field(default_factory=dict)
    freed: bool = False
    """FREE was written: a spare may create its CUDA context and start torch.compile's imports."""

    @property
    def dir(self) -> Path:
        return Path(self.tmp.name)

    def finish(self, request: dict, timeout_s: float,
               quiet: Callable[[Callable[[], bool]], None] | None = None) -> ChildRun:
        """Hand over the request (a spare: GO), close the child's stdin and wait for its verdict.
        `quiet(stop)`: returns once nothing of ours starts beside this child any more (a held
        spare's start-up is over) or `stop()` is true; stdin is closed only then, which the
        child's timing stage waits for (eval/judge/parent_pipe.py)."""
        d, proc = self.dir, self.run.proc
        started, timed_out, closer = time.time(), False, None
        try:
            if self.spare:
                (d / "request.json").write_text(json.dumps(request))
                # A spare never freed (taken while its evaluation still ran) gets GO alone: it imports
                # and creates its context as a judge started with its request does.
                self._write(GO)
            if quiet is None:
                self._close_stdin()
            else:
                closer = threading.Thread(target=self._close_when, args=(quiet,), daemon=True)
                closer.start()
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            sandbox.kill_all(self.run)  # nothing the candidate started may outlive the evaluation
            if closer is not None:
                closer.join()
            self._close_stdin()
        try:
            if self.table:
                ceilings.after(d, self.table, run_child)
            return ChildRun(payload=None if timed_out else _verified(d / "result.json", self.key),
                            stage=sandbox.read_capped(d / "progress", 64).strip() or "load",
                            log_tail=_tail(d / "worker.log"), timed_out=timed_out,
                            returncode=self.run.returncode(), elapsed_s=round(time.time() - started, 3))
        finally:
            self.tmp.cleanup()
            _untrack(self.run)

    def free(self) -> None:
        """Let a held spare touch the GPU (once)."""
        if self.spare and not self.freed:
            self.freed = True
            self._write(FREE)

    def wait_parked(self, stop: Callable[[], bool], cap_s: float = PARK_CAP_S) -> None:
        """Return once this spare's start-up is over (it wrote PARKED), it died, `stop()` is true
        or `cap_s` passed."""
        end = time.monotonic() + cap_s
        while time.monotonic() < end and not stop() and self.run.proc.poll() is None:
            if (self.dir / PARKED).exists():
                return
            time.sleep(PARK_POLL_S)

    def _close_when(self, quiet: Callable[[Callable[[], bool]], None]) -> None:
        try:
            quiet(lambda: self.run.proc.poll() is not None)
        finally:
            self._close_stdin()

    def _write(self, line: str) -> None:
        with contextlib.suppress(BrokenPipeError, ValueError, OSError):  # died: its log says why
            self.run.proc.stdin.write(line.encode())
            self.run.proc.stdin.flush()

    def _close_stdin(self) -> None:
        with contextlib.suppress(BrokenPipeError, ValueError, OSError):
            self.run.proc.stdin.close()

    def discard(self) -> None:
        sandbox.kill_all(self.run)
        self.tmp.cleanup()
        _untrack(self.run)


_LIVE: list[sandbox.SandboxRun] = []
_LIVE_LOCK = threading.Lock()


def _untrack(run: sandbox.SandboxRun) -> None:
    with _LIVE_LOCK:
        _LIVE[:] = [r for r in _LIVE if r is not run]


def stop_all() -> None:
    """End every child this process started that is still running (a Ctrl-C, or an error on
    another thread than the one waiting on it): that thread sees its child end at once and removes
    the scratch folder as usual, instead of the interpreter's exit racing a child still writing
    there."""
    with _LIVE_LOCK:
        runs = list(_LIVE)
    for run in runs:
        sandbox.cut_lifeline(run)


def _start(module: str, device: str, timeout_s: float, reference_only: bool,
           request: dict | None, role: str | None = None, tuning: dict[str, str] | None = None) -> _Started:
    """Start `module` in a fresh scratch folder with its key on stdin; `request` None: a spare
    judge, which gets its request through `finish`. `tuning`: autotuning records written into the
    child's own Triton cache before it starts (a role that shares the compile caches gets none)."""
    key = secrets.token_bytes(32)
    tmp = tempfile.TemporaryDirectory(prefix="kernelskill-eval-")
    d = Path(tmp.name)
    try:
        req, res, progress, log = d / "request.json", d / "result.json", d / "progress", d / "worker.log"
        if request is not None:
            req.write_text(json.dumps(request))
        progress.write_text("load")
        role = role or ("judge" if module == JUDGE else "child")
        if tuning and not ROLES[role].shared_caches:
            seed(private_caches(d)["TRITON_CACHE_DIR"], tuning)  # chowned with the folder below
        gpu_ceilings = device == "cuda" and module != ceilings.MODULE and not reference_only
        table = ceilings.prepare(d, run_child) if gpu_ceilings else {}
        # -P: the working directory is not put on sys.path; cwd is the scratch folder anyway.
        cmd = [sys.executable, "-P", "-m", module, str(req), str(res), str(progress)]
        if request is None:
            cmd += [SPARE_FLAG, device]
        with open(log, "wb") as logf:
            run = sandbox.sandboxed_popen(cmd, d, device, timeout_s=timeout_s, stdin=subprocess.PIPE,
                                          stdout=logf, stderr=subprocess.STDOUT,
                                          reference_only=reference_only, role=role)
        with _LIVE_LOCK:
            _LIVE.append(run)
        try:
            run.proc.stdin.write(key.hex().encode() + b"\n")
            run.proc.stdin.flush()
        except BrokenPipeError:
            pass  # it died at once: finish() reports how
        return _Started(device, timeout_s, tmp, run, key, request is None, table)
    except BaseException:
        tmp.cleanup()
        raise


def run_child(module: str, request: dict, device: str, timeout_s: float,
              reference_only: bool = False, role: str | None = None,
              tuning: dict[str, str] | None = None) -> ChildRun:
    """Run `python -P -m MODULE REQUEST RESULT PROGRESS` in a scratch folder, in the sandbox
    (eval/sandbox/layers.py: allowlisted environment, namespaces, rlimits, another uid where possible).

    The child reads a per-run signing key from stdin and must sign its result with it; on expiry
    of `timeout_s`, and in any case once it exits, it and everything it started are killed.
    `reference_only`: the child runs only the user's reference (sandbox.sandboxed_popen).
    `role`: sandbox.ROLES' name; by default "judge" for the judge, "child" for any other module.
    `tuning`: autotuning records (eval/judge/tuning.py) seeded into a child's private Triton cache.
    Inside `spare_judges()`, a judge started ahead for the same device and timeout runs it.
    """
    child = _SPARES.take(module, device, timeout_s, reference_only)
    if child is None:
        child = _start(module, device, timeout_s, reference_only, request, role, tuning)
    # Only a judge's run holds the next spare: a child it starts itself (the GPU ceilings measured
    # once) must not free that spare while the run is still on.
    early = device in EARLY_SPARE_DEVICES and module == JUDGE and not reference_only
    quiet = None
    if early:
        spare = _SPARES.refill(module, device, timeout_s, reference_only, held=True)
        quiet = spare.wait_parked if spare is not None else None
    try:
        run = child.finish(request, timeout_s, quiet)
    finally:
        if early:
            _SPARES.free()
    if not early:
        _SPARES.refill(module, device, timeout_s, reference_only, held=False)
    return run


class _Spares:
    """At most one spare judge, kept while `spare_judges()` is active (in any thread: a lock keeps
    two evaluations from taking, or starting, the same one)."""

    def __init__(self) -> None:
        self.depth = 0
        self.child: _Started | None = None
        self.lock = threading.Lock()

    def take(self, module: str, device: str, timeout_s: float, reference_only: bool) -> _Started | None:
        if module != JUDGE or reference_only:
            return None
        with self.lock:
            c, self.child = self.child, None
        if c is None:
            return None
        if (c.device, c.timeout_s) == (device, timeout_s) and c.run.proc.poll() is None:
            return c
        c.discard()  # another device or timeout, or it died while waiting
        return None

    def refill(self, module: str, device: str, timeout_s: float, reference_only: bool,
               held: bool) -> _Started | None:
        """Start a spare if none is kept; `held`: it waits for free() before touching the GPU.
        Returns the spare kept now (None outside `spare_judges()`)."""
        if module != JUDGE or reference_only:
            return None
        with self.lock:
            if self.depth and self.child is None:
                self.child = _start(JUDGE, device, timeout_s, False, None)
                if not held:
                    self.child.free()
            return self.child

    def free(self) -> None:
        """The evaluation that held the spare is over."""
        with self.lock:
            if self.child is not None:
                self.child.free()

    def clear(self) -> None:
        with self.lock:
            c, self.child = self.child, None
        if c is not None:
            c.discard()


_SPARES = _Spares()


@contextlib.contextmanager
def spare_judges() -> Iterator[None]:
    """While active, each judge run leaves a spare started for the next evaluation (same device
    and timeout); on exit the spare is killed. For loops of evaluations (optimize, bench)."""
    with _SPARES.lock:
        _SPARES.depth += 1
    try:
        yield
    finally:
        with _SPARES.lock:
            _SPARES.depth -= 1
            last = not _SPARES.depth
        if last:
            _SPARES.clear()


def _verified(res: Path, key: bytes) -> dict | None:
    try:
        wrapped = json.loads(sandbox.read_capped(res, RESULT_CAP))
        body, mac = wrapped["result"], wrapped["mac"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(body, str) or not verify(key, body, str(mac)):
        return None
    return json.loads(body)


def _tail(log: Path, n: int = 3000) -> str:
    """The log's last `n` bytes, read without loading it (the child may have written 256 MiB)."""
    try:
        with open(log, "rb", opener=sandbox.no_block) as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - n))
            return f.read(n).decode(errors="replace")
    except OSError:
        return ""

"""What a sandboxed child is handed: its role (ROLES), its whole environment (an allowlist, never
a secret of the evaluator) and the compile caches the trusted roles share. Split from layers.py,
which starts and ends the child."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

TOKEN_VAR = "KERNELSKILL_SANDBOX_RUN"
CACHE_VAR = "KERNELSKILL_COMPILE_CACHE"
"""The shared compile caches' folder, handed to a judge (whose own HOME and XDG_CACHE_HOME are its
scratch folder) so that the baseline process it starts finds them."""
NOBODY = 65534
BASELINE_UID = 65533
CHILD_USER = "kernelskill-child"
"""The user name a sandboxed child sees (USER, LOGNAME): no account of the host's."""
"""The baseline process's uid: not the candidate's, so neither can reach the other's processes."""


@dataclass(frozen=True)
class Role:
    """Who runs in a sandbox, and so what it is given.

    - judge: the evaluator's trusted half (the reference, seeds, comparison, clock, key). It keeps
      the caller's uid and capabilities, which it needs to put its candidate process in
      namespaces of its own under another uid, and a /dev/shm of its evaluation alone.
    - candidate: candidate code. Another uid than the judge, its own PID, mount and network
      namespaces nested in the judge's, a seccomp filter, compile caches of its own.
    - baseline: the reference timed as a candidate (eval/judge/baselines.py): the candidate's namespaces
      under a third uid, writing the shared compile caches, without the seccomp filter: no
      candidate code runs there, and torch.compile's stack failed to import under the filter
      (H100, 2026-12-06, tests/gpu/boundary_call.sh: "Artifact of type=inductor already
      registered", its first import having died part way).
    - child: any other sandboxed child (the profiler, the reference check): uid nobody, compile
      caches of its own (the profiler runs candidate code).
    """

    name: str
    uid: int | None
    shared_caches: bool
    seccomp: bool
    private_shm: bool
    file_size_limit: bool = True
    minimal_view: bool = False
    """Only system folders and what it imports from (paths.view_masks)."""


ROLES = {r.name: r for r in (Role("judge", None, True, False, True, file_size_limit=False),
                             Role("candidate", NOBODY, False, True, False, minimal_view=True),
                             Role("baseline", BASELINE_UID, True, False, False),
                             Role("child", NOBODY, False, False, False))}

_SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "COOKIE")
_ENV_NAMES = {"PATH", "LANG", "LANGUAGE", "TZ", "TERM", "LD_LIBRARY_PATH", "PYTHONPATH", "VIRTUAL_ENV",
              "CONDA_PREFIX", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "TORCH_CUDA_ARCH_LIST"}
_ENV_PREFIXES = ("LC_", "CUDA_", "NVIDIA_", "TRITON_")


def compile_caches() -> dict[str, Path]:
    """Triton's and Inductor's on-disk caches, shared by every evaluation (env variable -> folder).
    Rationale: in the scratch folder every evaluation recompiled and re-autotuned every kernel and
    torch.compile'd its baseline anew (15-25 s per conv problem on an H200, tests/gpu's prewarm
    timings). Only processes that run no candidate code write them (the judge, the baseline
    process: sandbox.ROLES); a candidate process compiles into caches in its own scratch folder,
    so an entry it plants (a poisoned kernel under an honest kernel's key) reaches no other run."""
    root = Path(os.environ.get(CACHE_VAR) or
                Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kernelskill-compile")
    return {"TRITON_CACHE_DIR": root / "triton", "TORCHINDUCTOR_CACHE_DIR": root / "inductor"}


def private_caches(scratch: Path) -> dict[str, Path]:
    """The compile caches of a child that shares none (ROLES: shared_caches), in its scratch folder."""
    return {k: scratch / ".cache" / v.name for k, v in compile_caches().items()}


def _ready_caches(uid: int | None) -> list[str]:
    """The compile cache folders, made and (when the child runs as another uid) owned by it."""
    out = []
    for path in compile_caches().values():
        path.mkdir(parents=True, exist_ok=True)
        if uid is not None and path.stat().st_uid != uid:
            for p in [path, *path.rglob("*")]:
                os.chown(p, uid, uid)
        out.append(str(path))
    return out


def child_env(device: str, scratch: Path, token: str = "") -> dict[str, str]:
    """The child's whole environment: an allowlist of what Python, torch, Triton and CUDA need;
    home and temp inside the scratch folder, the compile caches shared (compile_caches)."""
    env = {k: v for k, v in os.environ.items()
           if (k in _ENV_NAMES or k.startswith(_ENV_PREFIXES))
           and not any(m in k.upper() for m in _SECRET_MARKERS)}
    s = str(scratch)
    env.update(HOME=s, TMPDIR=s, XDG_CACHE_HOME=f"{s}/.cache", PYTHONUNBUFFERED="1")
    # getpass.getuser() reads these first: a child under a uid with no passwd entry (the baseline
    # process's) otherwise raises KeyError inside Inductor's import, and torch.compile fails there.
    env.update(USER=CHILD_USER, LOGNAME=CHILD_USER)
    caches = compile_caches()
    env.update({k: str(v) for k, v in caches.items()})
    env[CACHE_VAR] = str(caches["TRITON_CACHE_DIR"].parent)
    env.setdefault("PATH", os.defpath)
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
        env["CUDA_VISIBLE_DEVICES"] = ""
    else:
        env.pop("TRITON_INTERPRET", None)
    if token:
        env[TOKEN_VAR] = token
    return env


def child_exit(rc: int) -> NoReturn:
    """End a sandboxed child once its result is on disk, skipping the interpreter's teardown of
    torch (atexit handlers, Inductor's compile workers, freeing every module): ~2.5 s of a CPU
    evaluation's ~9 s (2 cores). Whatever the child started dies with its sandbox (kill_all)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc)

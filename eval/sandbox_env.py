"""What a sandboxed child is handed: its whole environment (an allowlist, never a secret of the
evaluator) and the compile caches every evaluation shares. Split from sandbox.py, which starts
and ends the child."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import NoReturn

TOKEN_VAR = "KERNELSKILL_SANDBOX_RUN"
_SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "COOKIE")
_ENV_NAMES = {"PATH", "LANG", "LANGUAGE", "TZ", "TERM", "LD_LIBRARY_PATH", "PYTHONPATH", "VIRTUAL_ENV",
              "CONDA_PREFIX", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "TORCH_CUDA_ARCH_LIST"}
_ENV_PREFIXES = ("LC_", "CUDA_", "NVIDIA_", "TRITON_")


def compile_caches() -> dict[str, Path]:
    """Triton's and Inductor's on-disk caches, shared by every evaluation (env variable -> folder).
    Rationale: in the scratch folder every evaluation recompiled and re-autotuned every kernel and
    torch.compile'd its baseline anew (15-25 s per conv problem on an H200, tests/gpu's prewarm
    timings). The folders are writable inside the sandbox; what a candidate could do with that
    (plant a cache entry) is bounded by the static checks and the audit hook (no file writes
    outside scratch and these caches), and entries are keyed by the compiled source's hash."""
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kernelskill-compile"
    return {"TRITON_CACHE_DIR": root / "triton", "TORCHINDUCTOR_CACHE_DIR": root / "inductor"}


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
    env.update({k: str(v) for k, v in compile_caches().items()})
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

"""Options several commands share: where to run (device, size), the precision policy, the state
database."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..state.state_db import StateDB


def add_device_arguments(p: argparse.ArgumentParser,
                         size_default: str = "full on cuda, small on cpu") -> None:
    """--device and --size; `size_default` says what the command does without --size."""
    p.add_argument("--device", choices=["cpu", "cuda"], default=None,
                   help="where to run (default: cuda if a GPU is visible, else cpu under Triton's "
                        "interpreter)")
    p.add_argument("--size", choices=["small", "full"], default=None,
                   help="problem sizes: the file's SMALL overrides or its full sizes "
                        f"(default: {size_default})")


def add_precision_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--precision", choices=["default", "strict", "tf32"], default=None,
                   help="precision policy, the same flags for candidate, yardstick and baselines: default "
                        "(PyTorch's own: TF32 cuDNN convolutions, IEEE fp32 matmuls), strict (IEEE fp32 "
                        "everywhere), tf32 (TF32 everywhere) (default: default, or the config file's)")
    p.add_argument("--allow-tf32", action="store_true", default=None, help="the same as --precision tf32")


def precision_of(args: argparse.Namespace) -> str | None:
    """The policy named on the command line (None: not given); a contradiction is a usage error."""
    from ..eval.precision import resolve
    from .main import UsageError

    try:
        return resolve(args.precision, args.allow_tf32)
    except ValueError as e:
        raise UsageError(str(e)) from None


def require_gpu(device: str) -> None:
    """A one-line usage error, before any work, when `device` is cuda and PyTorch sees no GPU
    (not after seconds of starting a judge, nor behind a static-check verdict)."""
    if device == "cuda":
        import torch

        from .main import UsageError

        if not torch.cuda.is_available():
            raise UsageError("CUDA requested but no GPU is visible to PyTorch; use --device cpu")


def resolve_device(device: str | None, size: str | None) -> tuple[str, str]:
    """The device given, else cuda when a GPU is visible; the size given, else full on cuda, small on cpu."""
    if device is None:
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    return device, size or ("full" if device == "cuda" else "small")


def add_state_db_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--state-db", default=None, metavar="URL",
                   help="where threads and experience statistics persist: sqlite:///PATH, or "
                        "postgresql://USER@HOST:PORT/DB for a team's database shared by many hosts "
                        "(needs kernelskill[postgres]; keep the password in PGPASSWORD or ~/.pgpass) "
                        "(default: the config file's paths.state_db, else SQLite in the cache folder)")


def with_state_db(cfg: Any, url: str | None) -> tuple[Any, StateDB]:
    """The configuration with --state-db applied, and the database it names, checked: a malformed
    URL or PostgreSQL without the extra is a usage error before any work."""
    from ..state.state_db import StateDBError, require_postgres, state_db_of
    from .main import UsageError

    try:
        cfg = cfg.override("paths", state_db=url)
        db = state_db_of(cfg.paths)
        if db.is_postgres:
            require_postgres()
    except StateDBError as e:
        raise UsageError(str(e)) from None
    return cfg, db

"""The GPU ceilings cache (roofline.Ceilings per GPU model): written by the evaluator, not a child.

Inside the sandbox a child's XDG_CACHE_HOME is its scratch folder and the user's cache is hidden
or read-only, so no candidate can rewrite the ceilings (a lower bandwidth would hide a result
that beats physics). The parent copies the user's table into each CUDA child's scratch, where
roofline.load_ceilings finds it. The table is measured by a child that runs no candidate code
(`python -m kernelskill.eval.timing.roofline`) before the first CUDA child when the table is empty, and
after one whose copy gained a GPU the table lacks (another model on this host: that child
measured it into its scratch only); the parent merges the trusted measurement into the cache.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..sandbox.layers import read_capped

MODULE = "kernelskill.eval.timing.roofline"
NAME = "ceilings.json"
MEASURE_TIMEOUT_S = 120.0
_measured = False  # at most one trusted measurement per process


def user_path() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kernelskill" / NAME


def scratch_path(scratch: Path) -> Path:
    """Where the child's roofline.cache_dir() points (sandbox.child_env: XDG_CACHE_HOME)."""
    return scratch / ".cache" / "kernelskill" / NAME


def read_table(path: Path) -> dict[str, Any]:
    try:  # capped and non-blocking: the scratch copy is the child's to replace
        table = json.loads(read_capped(path, 1 << 20) or "{}")
    except ValueError:
        return {}
    return table if isinstance(table, dict) else {}


def prepare(scratch: Path, run: Callable[..., Any]) -> dict[str, Any]:
    """Before a CUDA child: measure when nothing is cached yet, then copy the table in."""
    table = read_table(user_path())
    if not table:
        table = measure(run, table)
    if table:
        dst = scratch_path(scratch)
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_text(json.dumps(table))
    return table


def after(scratch: Path, table: dict[str, Any], run: Callable[..., Any]) -> None:
    """After a CUDA child: a GPU its copy gained and the cache lacks is measured, trusted."""
    if set(read_table(scratch_path(scratch))) - set(table):
        measure(run, table)


def measure(run: Callable[..., Any], table: dict[str, Any]) -> dict[str, Any]:
    """The table with this GPU's ceilings measured in a trusted child; the user's cache updated."""
    global _measured
    if _measured:
        return table
    _measured = True
    child = run(MODULE, {"table": table}, "cuda", MEASURE_TIMEOUT_S)
    entry = (child.payload or {}).get("entry")
    if not isinstance(entry, dict) or not child.payload.get("gpu"):
        return table
    merged = {**read_table(user_path()), child.payload["gpu"]: entry}
    path = user_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(merged, indent=1))
    tmp.replace(path)
    return merged

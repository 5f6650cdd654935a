"""Autotuning picks carried from one evaluation of a run to its later ones, as data the judge rebuilt.

Why: a candidate process compiles into a Triton cache of its own (an entry it wrote would otherwise
reach other evaluations: a poisoned kernel under an honest kernel's key), so every evaluation
re-ran every `@triton.autotune`: each configuration compiled and benchmarked, most of a later
evaluation's seconds (H100, 2026-12-06, problems/measurements/h100-2026-12-06-rounds/: compile
4.3-10 s of 9.6-16 s). Triton's `cache_results` keeps a kernel's tuning as a small JSON file
(`<key>/<kernel>.autotune.json`: each configuration and its measured time) next to the binaries.

What crosses, and why it earns nothing unearned:
- only those JSON files, never a binary: `harvest` reads them from the dead candidate's scratch
  (no link followed, sizes capped) and `rebuild` keeps only plain numbers and names, dropping
  anything that runs code or reads a file (`pre_hook`, `ir_override`);
- a pick only chooses launch parameters of the candidate's own checked kernel, as the candidate
  could have chosen itself; what runs is still compiled in its process and checked and timed by
  the judge as every run is;
- they are handed only to 'rank' evaluations of the same run (nodes/reviewer.py), and the
  delivered candidate is re-timed in full with a cache of its own (nodes/finalize.py), so a
  reported number never rests on a pick the user's run would not make.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from pathlib import Path
from typing import Any

_KEY_DIR = re.compile(r"[A-Z2-7]{52}")  # Triton's cache key: base32 of a sha256, unpadded
_FILE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,149}\.autotune\.json")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,63}")  # a dtype in a tuning key: "torch.float32"
MAX_FILE_BYTES = 64 << 10
MAX_RECORDS = 256
MAX_CONFIGS = 128
_CONFIG_INTS = {"num_warps": 1, "num_stages": 0, "num_ctas": 1}  # name: least value


def _number(v: Any) -> bool:
    return type(v) in (int, float) and math.isfinite(v)


def _plain(v: Any) -> bool:
    """A value a configuration's keyword or a tuning key may hold: a number, a flag or a short name."""
    return type(v) is bool or _number(v) or (type(v) is str and bool(_NAME.fullmatch(v)))


def _config(raw: Any) -> dict[str, Any] | None:
    if type(raw) is not dict or type(raw.get("kwargs")) is not dict:
        return None
    kwargs = raw["kwargs"]
    if len(kwargs) > 32 or not all(type(k) is str and _IDENT.fullmatch(k) and _plain(v)
                                   for k, v in kwargs.items()):
        return None
    out: dict[str, Any] = {"kwargs": dict(kwargs)}
    for name, least in _CONFIG_INTS.items():
        v = raw.get(name)
        if type(v) is not int or not least <= v <= 64:
            return None
        out[name] = v
    maxnreg = raw.get("maxnreg")
    if maxnreg is not None and (type(maxnreg) is not int or not 1 <= maxnreg <= 65536):
        return None
    out["maxnreg"] = maxnreg
    return out  # pre_hook and ir_override left out: Config's defaults (None) apply


def _time(v: Any) -> bool:
    """A measured time: finite, or +inf (Triton's mark of a configuration that did not fit)."""
    return _number(v) or (type(v) is float and v == math.inf)


def _timing(raw: Any) -> float | list[float] | None:
    if _time(raw):
        return float(raw)
    if type(raw) is list and 0 < len(raw) <= 8 and all(_time(t) for t in raw):
        return [float(t) for t in raw]
    return None


def rebuild(text: str) -> str | None:
    """The file Triton reads back, rebuilt from validated values; None when anything is off."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if type(data) is not dict or type(data.get("configs_timings")) is not list:
        return None
    key = data.get("key")
    if type(key) is not list or len(key) > 32 or not all(k is None or _plain(k) for k in key):
        return None
    pairs = data["configs_timings"]
    if not 0 < len(pairs) <= MAX_CONFIGS:
        return None
    kept = []
    for pair in pairs:
        if type(pair) is not list or len(pair) != 2:
            return None
        config, timing = _config(pair[0]), _timing(pair[1])
        if config is None or timing is None:
            return None
        kept.append([config, timing])
    return json.dumps({"key": list(key), "configs_timings": kept})


def _read_capped(dir_fd: int, name: str) -> str | None:
    """A regular file in `dir_fd`, links not followed, at most MAX_FILE_BYTES; None otherwise."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = f.read(MAX_FILE_BYTES + 1)
    return data.decode("utf-8", "replace") if len(data) <= MAX_FILE_BYTES else None


def _open_dir(name: str | Path, dir_fd: int | None = None) -> int | None:
    try:
        return os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
    except OSError:
        return None


def _open_below(base: Path, parts: tuple[str, ...]) -> int | None:
    """`base/parts...` as a directory descriptor, no component a link (the candidate made them)."""
    fd = _open_dir(base)
    for part in parts:
        if fd is None:
            return None
        sub = _open_dir(part, fd)
        os.close(fd)
        fd = sub
    return fd


def harvest(scratch: Path, cache_dir: Path) -> dict[str, str]:
    """The tuning files in a candidate's Triton cache `cache_dir`, a folder below its scratch folder
    ("<key>/<kernel>.autotune.json" -> rebuilt text). Call it once every process of the candidate
    is dead: nothing then changes the folder while it is read. No link is followed on the way
    down from `scratch`; unexpected names and files that do not rebuild are skipped."""
    out: dict[str, str] = {}
    root = _open_below(scratch, cache_dir.relative_to(scratch).parts)
    if root is None:
        return out
    try:
        for key in sorted(os.listdir(root)):
            if not _KEY_DIR.fullmatch(key) or len(out) >= MAX_RECORDS:
                continue
            sub = _open_dir(key, root)
            if sub is None:
                continue
            try:
                for name in sorted(os.listdir(sub)):
                    if not _FILE.fullmatch(name) or len(out) >= MAX_RECORDS:
                        continue
                    text = _read_capped(sub, name)
                    clean = rebuild(text) if text is not None else None
                    if clean is not None:
                        out[f"{key}/{name}"] = clean
            finally:
                os.close(sub)
    finally:
        os.close(root)
    return out


def seed(cache_dir: Path, records: dict[str, str] | None) -> int:
    """Write `records` (as `harvest` returns them, from any source) into a fresh Triton cache
    before its candidate starts, each rebuilt again here; returns how many were written."""
    if type(records) is not dict:
        return 0
    written = 0
    for rel, text in sorted(records.items(), key=lambda kv: str(kv[0]))[:MAX_RECORDS]:
        if type(rel) is not str:
            continue
        key, _, name = rel.partition("/")
        clean = rebuild(text) if type(text) is str else None
        if not (_KEY_DIR.fullmatch(key) and _FILE.fullmatch(name)) or clean is None:
            continue
        folder = cache_dir / key
        folder.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(clean)
        written += 1
    return written


def merge(kept: dict[str, str] | None, new: dict[str, str] | None) -> dict[str, str]:
    """A run's tuning so far with an evaluation's added (the newer record wins), capped."""
    out = dict(kept or {})
    for rel, text in (new or {}).items():
        if rel in out or len(out) < MAX_RECORDS:
            out[rel] = text
    return out


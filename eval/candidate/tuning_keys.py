"""Autotuning records found by what a kernel is, not where it sits in its file.

Triton files a kernel's tuning (`cache_results`) under a key that includes the kernel's starting
line. A later candidate of the same run that changes one kernel moves every kernel below it, and
their carried records (eval/judge/tuning.py) would never be found again. `install()` makes the
autotuner's disk-cache key of this process use the kernel's source text instead of its position:
the same text, configurations, tuning key and GPU find the same record wherever the kernel sits.

Only the record's key changes: while the autotuner benchmarks, the kernel's real key is back, so
compiled binaries are filed exactly as before. This runs in the candidate's own process and only
decides which of its own configurations it launches; the judge trusts none of it.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from typing import Any

_installed: list[bool] = []


def line_free_key(fn: Any) -> str:
    """A JITFunction's identity for tuning records: its source text and the constexpr globals it
    reads (what Triton's own key holds besides positions)."""
    fn.cache_key  # noqa: B018 (fills used_global_vals, as Triton's key does)
    used = getattr(fn, "used_global_vals", {})
    consts = sorted((str(name), repr(val)) for (name, _), (val, _) in used.items())
    return hashlib.sha256(f"{fn.src}\n{consts}".encode()).hexdigest()


def _jit_function(autotuner: Any) -> Any:
    fn = autotuner.fn
    while hasattr(fn, "fn") and not hasattr(fn, "src"):
        fn = fn.fn
    return fn


def keyed_by_source(check_disk_cache: Callable[..., bool]) -> Callable[..., bool]:
    """Wrap Autotuner.check_disk_cache(self, tuning_key, configs, bench_fn) as described above."""

    @functools.wraps(check_disk_cache)
    def wrapped(self: Any, tuning_key: Any, configs: Any, bench_fn: Callable[[], None]) -> bool:
        fn = _jit_function(self)
        if not hasattr(fn, "src") or not hasattr(fn, "hash"):
            return check_disk_cache(self, tuning_key, configs, bench_fn)
        real = fn.cache_key
        record_key = line_free_key(fn)

        def bench() -> None:  # binaries are compiled and filed under the kernel's real key
            fn.hash = real
            try:
                bench_fn()
            finally:
                fn.hash = record_key

        fn.hash = record_key
        try:
            return check_disk_cache(self, tuning_key, configs, bench)
        finally:
            fn.hash = real

    return wrapped


def install() -> None:
    """Once per process; a Triton without `check_disk_cache` (before 3.4) is left as it is."""
    if _installed:
        return
    _installed.append(True)
    from triton.runtime.autotuner import Autotuner

    if hasattr(Autotuner, "check_disk_cache"):
        Autotuner.check_disk_cache = keyed_by_source(Autotuner.check_disk_cache)

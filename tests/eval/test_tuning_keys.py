"""Tuning records keyed by what a kernel is (eval/candidate/tuning_keys.py): the same text at
another line finds the same record, other text does not, and binaries keep the real key."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

from kernelskill.eval.candidate import tuning_keys as K
from triton.runtime.jit import JITFunction

KERNEL = '''
def scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * FACTOR, mask=offs < n)
'''


def _kernel(tmp_path: Path, name: str, pad: int, factor: str = "2.0") -> Any:
    """`scale` defined `pad` lines down a module file of its own (Triton reads sources from files),
    as a compiled-path JITFunction even under the tests' TRITON_INTERPRET=1."""
    path = tmp_path / f"{name}.py"
    path.write_text("import triton\nimport triton.language as tl\n" + "\n" * pad +
                    f"FACTOR: tl.constexpr = {factor}\n" + KERNEL)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return JITFunction(mod.scale)


def test_the_same_kernel_lower_in_its_file_has_the_same_record_key(tmp_path: Path) -> None:
    a, b = _kernel(tmp_path, "ks_tk_a", 0), _kernel(tmp_path, "ks_tk_b", 40)
    assert a.cache_key != b.cache_key  # Triton's own key moves with the line
    assert K.line_free_key(a) == K.line_free_key(b)
    other_const = _kernel(tmp_path, "ks_tk_c", 0, factor="3.0")
    assert K.line_free_key(other_const) != K.line_free_key(a)


def test_binaries_are_filed_under_the_real_key_while_records_use_the_source(tmp_path: Path) -> None:
    fn = _kernel(tmp_path, "ks_tk_d", 7)
    real = fn.cache_key
    seen: dict[str, str] = {}

    def check_disk_cache(self: Any, tuning_key: Any, configs: Any, bench_fn: Any) -> bool:
        seen["record"] = self.fn.cache_key
        bench_fn()
        seen["after_bench"] = self.fn.cache_key
        return False

    class Tuner:  # what the wrapper reads of triton's Autotuner
        def __init__(self) -> None:
            self.fn = fn

    def bench() -> None:
        seen["binary"] = fn.cache_key

    K.keyed_by_source(check_disk_cache)(Tuner(), ("k",), [], bench)
    assert seen == {"record": K.line_free_key(fn), "binary": real, "after_bench": K.line_free_key(fn)}
    assert fn.cache_key == real  # left as it was

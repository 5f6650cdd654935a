"""The runtime shipped into solution.py: converted modules are real Python (importing only torch,
triton, math and their runtime siblings), pasted without their docstring and imports, and every
helper pasted into one file is defined once."""

from __future__ import annotations

import ast
from pathlib import Path

import torch
from kernelskill.authors.builtin import runtime
from kernelskill.authors.builtin.runtime import common, scan
from kernelskill.authors.builtin.runtime.conv_pool import CP_PLANS, CP_RUNTIME
from kernelskill.authors.builtin.runtime.gemm import GEMM_RUNTIME
from kernelskill.authors.builtin.runtime.gemm_prep import GEMM_PREP
from kernelskill.authors.builtin.runtime.norms import RUNTIME as NORMS_RUNTIME
from kernelskill.authors.builtin.runtime.reductions import RUNTIME as REDUCTIONS_RUNTIME
from kernelskill.eval.problem import exec_module

CONVERTED = {common: runtime.COLLAPSE, scan: runtime.SCAN_RUNTIME}
ALLOWED = {"torch", "triton", "triton.language", "math"}
HEADER = "import math\nimport torch\nimport triton\nimport triton.language as tl\n"


def _defs(tree: ast.Module) -> list[str]:
    names = []
    for n in tree.body:
        if isinstance(n, (ast.FunctionDef, ast.ClassDef)):
            names.append(n.name)
        elif isinstance(n, ast.Assign):
            names += [t.id for t in n.targets if isinstance(t, ast.Name)]
    return names


def test_converted_modules_import_only_torch_triton_math() -> None:
    for mod in CONVERTED:
        for n in ast.parse(Path(mod.__file__).read_text()).body:
            if isinstance(n, ast.Import):
                assert {a.name for a in n.names} <= ALLOWED, mod.__name__
            elif isinstance(n, ast.ImportFrom):
                assert n.level == 1 or n.module in ALLOWED, f"{mod.__name__} imports {n.module}"


def test_pasted_source_is_the_module_without_docstring_and_imports() -> None:
    for mod, pasted in CONVERTED.items():
        tree = ast.parse(pasted)
        assert not any(isinstance(n, (ast.Import, ast.ImportFrom)) for n in tree.body), mod.__name__
        assert ast.get_docstring(tree) is None
        assert _defs(tree) == _defs(ast.parse(Path(mod.__file__).read_text()))


def test_pasted_helpers_run_standalone() -> None:
    """Executed as the evaluator executes a candidate (no kernelskill import): the scan helpers
    find the common ones they call, and agree with the imported module."""
    ns = exec_module(HEADER + runtime.COLLAPSE + runtime.SCAN_RUNTIME, "runtime_paste.py", "paste")
    t = torch.empty(2, 3, 4).permute(0, 2, 1)
    for dim in range(3):
        assert ns._scan_geometry(t, dim) == scan._scan_geometry(t, dim)
    assert ns._cdiv(7, 2) == 4 and ns._npow2(5) == 8


def test_scan_views_and_plans() -> None:
    assert scan._scan_geometry(torch.empty(2, 3, 4), 1) == (12, 4, 1)
    # Inner dims (4, 3) with strides (1, 4) do not merge into one run.
    assert scan._scan_geometry(torch.empty(2, 3, 4).permute(0, 2, 1), 0) is None
    # A transposed matrix scanned along its rows runs as lanes: neighbouring lines are adjacent.
    x = torch.empty(7, 5).t()
    g = scan._scan_geometry(x, 1)
    rows, O, N, I, *_ = scan._scan_plan(x.shape, 1, g, (7, 1, 0), torch.device("cpu"), "never", [x])  # noqa: E741
    assert (rows, O, N, I) == (False, 1, 7, 5)
    rows, O, N, I, *_ = scan._scan_plan((5, 7), 1, (7, 1, 0), (7, 1, 0), torch.device("cpu"), "never", [])  # noqa: E741
    assert (rows, O, N, I) == (True, 5, 7, 1)


def test_every_pasted_helper_is_defined_once() -> None:
    """All runtime sources can land in one solution.py: a name defined twice would shadow the other."""
    seen: dict[str, str] = {}
    sources = {"common": runtime.COLLAPSE, "scan": runtime.SCAN_RUNTIME, "gemm": GEMM_RUNTIME,
               "gemm_prep": GEMM_PREP, "norms": NORMS_RUNTIME, "reductions": REDUCTIONS_RUNTIME,
               "conv_pool": CP_RUNTIME + CP_PLANS}
    for where, src in sources.items():
        for name in _defs(ast.parse(src)):
            assert name not in seen, f"{name} defined in both {seen[name]} and {where}"
            seen[name] = where

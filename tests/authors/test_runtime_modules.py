"""The runtime shipped into solution.py: converted modules are real Python (importing only torch,
triton, math and their runtime siblings), pasted without their docstring and imports, and every
helper pasted into one file is defined once."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest
import torch
from kernelskill.authors.builtin import runtime
from kernelskill.authors.builtin.runtime import (
    attention,
    attention_parts,
    common,
    conv_gemm,
    conv_layout,
    conv_parts,
    conv_pool,
    conv_tail,
    gemm,
    gemm_prep,
    graph_forward,
    graph_replay,
    guards,
    losses,
    norm_batch,
    norm_groups,
    norms,
    pool_global,
    pool_plans,
    pool_window,
    reductions,
    scan,
)
from kernelskill.authors.builtin.templates.api import WINDOW_CONSTS
from kernelskill.eval.problem import exec_module

CONVERTED = {common: runtime.COLLAPSE, scan: runtime.SCAN_RUNTIME, reductions: runtime.REDUCTIONS_RUNTIME,
             losses: runtime.LOSSES_RUNTIME, norms: runtime.NORMS_RUNTIME,
             norm_batch: runtime.NORM_BATCH, norm_groups: runtime.NORM_GROUPS, gemm: runtime.GEMM_RUNTIME,
             gemm_prep: runtime.GEMM_PREP, conv_pool: runtime.CP_RUNTIME, pool_plans: runtime.CP_PLANS,
             pool_window: runtime.POOL_WINDOW, pool_global: runtime.POOL_GLOBAL,
             graph_replay: runtime.GRAPH_REPLAY, graph_forward: runtime.GRAPH_FORWARD,
             guards: runtime.GUARDS, conv_gemm: runtime.CONV_GEMM, conv_parts: runtime.CONV_PARTS,
             conv_layout: runtime.CONV_LAYOUT, conv_tail: runtime.CONV_TAIL, attention: runtime.ATTENTION,
             attention_parts: runtime.ATTENTION_PARTS}
SKILLS = Path(__file__).resolve().parents[2] / "skills"
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
    """Executed as the evaluator executes a candidate (no kernelskill import): every module's
    helpers find the siblings' ones they call, and agree with the imported modules."""
    ns = exec_module(HEADER + "".join(CONVERTED.values()), "runtime_paste.py", "paste")
    t = torch.empty(2, 3, 4).permute(0, 2, 1)
    for dim in range(3):
        assert ns._scan_geometry(t, dim) == scan._scan_geometry(t, dim)
    shape = list(t.shape)
    assert ns._nrm_layout(shape, t.stride(), 1, 2) == norms._nrm_layout(shape, t.stride(), 1, 2)
    assert ns._gemm_ext(t, (2, 4, 3), (2, 4, 3))[1:] == gemm._gemm_ext(t, (2, 4, 3), (2, 4, 3))[1:]
    assert ns._cp_flat([t], t.shape, 1, 6) == pool_plans._cp_flat([t], t.shape, 1, 6)
    assert ns._GEMM_PREP_MIN == gemm_prep._GEMM_PREP_MIN
    for dims in ([0], [1], [2], [0, 1], [0, 2], [1, 2]):
        got, want = ns._red_layout(list(t.shape), dims, [t]), reductions._red_layout(list(t.shape), dims, [t])
        assert got[1:] == want[1:] and got[0][0] is t, dims
    assert ns._cdiv(7, 2) == 4 and ns._npow2(5) == 8
    for size, args in ((7, (3, 2, 1, 1, False)), (7, (3, 2, 1, 1, True)), (10, (2, 3, 0, 2, True))):
        assert ns._pool_out(size, *args) == pool_window._pool_out(size, *args)
    x = torch.empty(2, 3, 7, 6, device="meta")
    want = pool_window._pool_plan((3, 2, 1, 1, True, True, None), [x], 1, 2, False)
    got = ns._pool_plan((3, 2, 1, 1, True, True, None), [x], 1, 2, False)
    assert got[:6] == want[:6] and want[0] == (2, 3, 4, 4)
    got, want = ns._gpool_plan((), [x], 1, 2), pool_global._gpool_plan((), [x], 1, 2)
    assert got[:2] + got[3:6] == want[:2] + want[3:6] and got[2] != got[2]  # the fill: NaN


def _views() -> list[torch.Tensor]:
    base = torch.arange(2 * 3 * 4 * 5, dtype=torch.float32).reshape(2, 3, 4, 5)
    return [base, base.permute(0, 2, 1, 3), base[:, 1:], base[..., ::2], base[:, :1],
            base.expand(3, 2, 3, 4, 5), base.transpose(2, 3), base[:, :, 1:3, :]]


def test_merged_dims_address_the_same_elements() -> None:
    """_merge_dims keeps the logical row-major order: the merged sizes and strides, read from the
    same storage, give back every view element for element, and no two neighbours it leaves apart
    could have merged."""
    for t in _views():
        sizes, (strides,) = common._merge_dims(list(t.shape), [t.stride()])
        flat = torch.as_strided(t, sizes, strides, t.storage_offset())
        assert torch.equal(flat.reshape(t.shape), t), (t.shape, t.stride())
        assert all(strides[i] != strides[i + 1] * sizes[i + 1] for i in range(len(sizes) - 1))
    # Two tensors merge only where both allow it: a transposed partner keeps the dims apart.
    a = torch.empty(3, 4)
    assert common._merge_dims([3, 4], [a.stride(), a.stride()]) == ([12], [[1], [1]])
    assert common._merge_dims([3, 4], [a.stride(), a.t().contiguous().t().stride()]) == (
        [3, 4], [[4, 1], [1, 3]])
    assert common._merge_dims([1, 1], [(5, 7)]) == ([], [[]])


def test_reduction_layouts() -> None:
    x = torch.empty(4, 6, 8)
    _, o, k, i, strides, swapped = reductions._red_layout([4, 6, 8], [1], [x])
    assert (o, k, i, swapped) == ((4, 4, False), (6, 6, False), (8, 8, False), False)
    assert strides == [[0, 48, 0, 8, 0, 1]]
    _, o, k, i, strides, swapped = reductions._red_layout([4, 6, 8], [0], [x])
    assert (o, k, i, swapped) == ((1, 1, False), (4, 4, False), (48, 48, False), False)
    # Nothing after the reduced dim: the kept dims move to I, so x.t().sum(1), a column
    # reduction in memory, walks them with unit stride.
    _, o, k, i, strides, swapped = reductions._red_layout([8, 24], [1], [torch.empty(24, 8).t()])
    assert (o, k, i, swapped) == ((1, 1, False), (24, 24, False), (8, 8, False), True)
    assert strides == [[0, 0, 0, 8, 0, 1]]
    # Reducing dims 0 and 2 of a 3-D tensor: the reduced ones are two dims of K, the kept one I.
    _, o, k, i, strides, swapped = reductions._red_layout([4, 6, 8], [0, 2], [x])
    assert (o, k, i, swapped) == ((1, 1, False), (32, 8, True), (6, 6, False), True)
    assert strides == [[0, 0, 48, 1, 0, 8]]
    assert reductions._red_align(48, 8, 0) == 8 and reductions._red_align(6) == 2


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
    for mod, src in CONVERTED.items():
        for name in _defs(ast.parse(src)):
            assert name not in seen, f"{name} defined in both {seen[name]} and {mod.__name__}"
            seen[name] = mod.__name__


def test_every_runtime_file_is_a_pasted_module() -> None:
    """No helper source hides in a string any more: each file of runtime/ is a module pasted by
    `source` under one of runtime's constants, and defines no string holding code."""
    files = {p.stem for p in Path(runtime.__file__).parent.glob("*.py")} - {"__init__"}
    assert files == {m.__name__.rsplit(".", 1)[1] for m in CONVERTED}
    for mod in CONVERTED:
        for n in ast.parse(Path(mod.__file__).read_text()).body:
            if isinstance(n, ast.Assign) and isinstance(n.value, (ast.Constant, ast.JoinedStr)):
                text = n.value.value if isinstance(n.value, ast.Constant) else ""
                assert not isinstance(n.value, ast.JoinedStr) and "def " not in str(text), mod.__name__


def _code_in_strings(path: Path) -> list[str]:
    """Module-level assignments whose value holds a string that is Python defining a function."""
    found = []
    for n in ast.parse(path.read_text()).body:
        if not isinstance(n, (ast.Assign, ast.AnnAssign)) or n.value is None:
            continue
        for c in ast.walk(n.value):
            if isinstance(c, ast.Constant) and isinstance(c.value, str) and "def " in c.value:
                try:
                    tree = ast.parse(textwrap.dedent(c.value))
                except SyntaxError:
                    continue
                if any(isinstance(d, (ast.FunctionDef, ast.ClassDef)) for d in ast.walk(tree)):
                    found.append(f"{path.parent.name}/{path.name}:{n.lineno}")
    return found


def test_no_skill_template_ships_code_in_a_string(tmp_path: Path) -> None:
    """Helpers a skill's template pastes into solution.py are runtime modules, not string literals
    (generated kernels and launchers are built by code, and are not held as constants)."""
    templates = sorted(SKILLS.glob("*/template.py"))
    assert len(templates) > 30
    assert [f for p in templates for f in _code_in_strings(p)] == []
    probe = tmp_path / "template.py"  # what the check looks for, as the pooling templates had it
    probe.write_text("A = 'no code'\nB = '''\ndef _plan(x):\n    return x\n'''.replace('x', 'y')\n")
    assert _code_in_strings(probe) == [f"{tmp_path.name}/template.py:2"]


def test_the_window_plans_bind_the_window_kernels_constexprs() -> None:
    """runtime/pool_window.py's _window_kw gives the window kernels (pooling, depthwise-conv-direct)
    exactly the constexprs their signatures declare (WINDOW_CONSTS), each from its own axis."""
    kw = pool_window._window_kw((1, 2, 3), (4, 5, 6), (7, 8, 9), (10, 11, 12))
    assert list(kw) == WINDOW_CONSTS
    assert list(kw.values()) == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]


def test_merge_rule_callers_agree_with_it() -> None:
    """The GEMM batch collapse, the one-run merges of norms, scans and conv / pool strides are
    _merge_dims under other names."""
    a, b = torch.empty(2, 3, 4, 5, 6), torch.empty(2, 3, 4, 6, 5).transpose(-1, -2)
    # Merged batch dims keep the inner stride; padded on the left to two triples.
    assert gemm._gemm_batch((2, 3, 4), a.stride()[:3], b.stride()[:3]) == [[1, 0, 0], [24, 30, 30]]
    # Dims merge only where both operands allow it: b's dims 0 and 1 would, a's do not.
    assert gemm._gemm_batch((3, 2, 4), (100, 4, 1), (8, 4, 1)) == [[3, 100, 8], [8, 1, 1]]
    assert gemm._gemm_batch((2, 3, 4), (0, 1, 100), (12, 4, 1)) is None
    assert norms._nrm_merge_dims([2, 3, 4], [12, 4, 1], [1, 2]) == (12, 1)
    assert norms._nrm_merge_dims([2, 3, 4], [12, 1, 3], [1, 2]) is None
    assert norms._nrm_merge_dims([2, 1, 4], [4, 4, 1], [1]) == (1, 0)
    assert common._merge_run([3, 1, 4], [8, 99, 2]) == (12, 2)
    assert common._merge_run([3, 4], [1, 3]) is None


def test_conv_pool_strides_and_planes() -> None:
    x = torch.empty(2, 3, 4, 5)
    # (n, c, d, h, w, j): one spatial run of stride 1 for a contiguous NCHW tensor.
    assert conv_pool._cp_strides(x, x.shape, 2) == (60, 20, 0, 5, 1, 1)
    assert conv_pool._cp_strides(x.transpose(2, 3), (2, 3, 5, 4), 2)[-1] == -1
    assert conv_pool._cp_strides(torch.empty(2, 3, 1, 1), (2, 3, 1, 1), 2)[-1] == 0
    # Where a view's spatial dims form one run, stride j walks them all in order.
    for t in _views():
        *lead, j = conv_pool._cp_strides(t, t.shape, 2)
        if j >= 0:
            run = torch.as_strided(t, (*t.shape[:-2], t.shape[-2] * t.shape[-1]), (*t.stride()[:-2], j),
                                   t.storage_offset())
            assert torch.equal(run, t.reshape(*t.shape[:-2], -1)), (t.shape, t.stride())
    assert conv_pool._cp_planes((2, 3, 4, 5), 2) == (2, 3, (1, 4, 5))
    assert conv_pool._cp_tup([3], 2) == (3, 3) and conv_pool._cp_tup(2, 3) == (2, 2, 2)


def test_one_int64_rule() -> None:
    """_i64, the offset-width rule of every family's launchers, on metadata alone."""
    def meta(shape: tuple[int, ...], stride: tuple[int, ...]) -> torch.Tensor:
        return torch.empty_strided(shape, stride, device="meta")

    assert not common._i64(torch.empty(4, 4), None)
    assert common._i64(n=2**31) and not common._i64(n=2**31 - 1)
    assert not common._i64(meta((2, 2), (2**30, 1)))  # farthest element at 2**30 + 1
    assert common._i64(meta((3, 2), (2**30, 1)))  # at 2**31 + 1
    assert common._i64(torch.empty(1, device="meta").expand(2**31))  # 2**31 elements, one address
    assert not common._i64(meta((0, 2**32), (2**32, 1)))  # empty: addresses nothing


@pytest.mark.parametrize("transposed", [False, True])
def test_conv_gemm_plans_give_torch_output_shapes(transposed: bool) -> None:
    """_cv_gemm_plan's geometry (output size, GEMM sizes) agrees with torch's convolutions, 1D-3D,
    strided, padded, dilated and grouped, batched or not; an empty output launches nothing."""
    F = torch.nn.functional
    # dims, spatial size, kernel, stride, padding, dilation, groups, output padding
    cases = [(1, (9,), 3, 2, 1, 1, 1, 1), (2, (7, 6), 3, 1, 1, 2, 2, 0), (3, (4, 5, 3), 2, 2, 0, 1, 1, 1),
             (2, (5, 5), 1, 1, 0, 1, 1, 0)]
    for dims, spatial, k, s, p, d, g, opad in cases:
        for lead in ((2, 4), (4,)):
            x = torch.empty(*lead, *spatial, device="meta")
            w = torch.empty(4, 6 // g, *(k,) * dims, device="meta") if transposed else \
                torch.empty(6, 4 // g, *(k,) * dims, device="meta")
            if transposed:
                attrs = (s, p, opad if s > 1 else 0, g, d)
                want = getattr(F, f"conv_transpose{dims}d")(x, w, None, *attrs).shape
            else:
                attrs = (s, p, d, g)
                want = getattr(F, f"conv{dims}d")(x, w, None, *attrs).shape
            plan = conv_gemm._cv_gemm_plan((*attrs, False), [x, w], conv_gemm._cv_one_pass, dims, transposed)
            assert plan[0] == want and plan[1], (dims, lead, transposed)
    x, w = torch.empty(0, 4, 5, 5, device="meta"), torch.empty(6, 4, 3, 3, device="meta")
    assert conv_gemm._cv_gemm_plan((1, 1, 1, 1, True), [x, w], conv_gemm._cv_one_pass, 2, False)[1] is False


def test_layout_conversions_are_atens() -> None:
    """_cv_relayout (the tiled transpose the vendor-conv launchers convert inputs to channels-last
    and outputs back with) gives aten's tensor exactly, both ways, 2-D and 3-D, with plane sides
    off every tile size; what it does not transpose itself (already in the format, strided views,
    empty, other ranks) goes through aten."""
    torch.manual_seed(0)
    plans: dict = {}
    for shape in ((2, 3, 5, 7), (3, 37, 9, 4), (1, 70, 3, 3, 5), (2, 1, 4, 4)):
        cl = torch.channels_last if len(shape) == 4 else torch.channels_last_3d
        x = torch.randn(shape)
        y = conv_layout._cv_relayout(x, cl, plans)
        assert y.is_contiguous(memory_format=cl) and torch.equal(y, x), shape
        assert y.stride() == x.contiguous(memory_format=cl).stride()
        back = conv_layout._cv_relayout(y, torch.contiguous_format, plans)
        assert back.is_contiguous() and torch.equal(back, x), shape
    assert sum(k[0] == "transpose" for k in plans) >= 6  # the kernel ran both ways, not aten
    x = torch.randn(2, 6, 5, 5)
    for view in (x.contiguous(memory_format=torch.channels_last), x[:, ::2], x[:0], x[0]):
        fmt = torch.channels_last if view.dim() == 4 else torch.contiguous_format
        y = conv_layout._cv_relayout(view, fmt, {})
        assert torch.equal(y, view) and y.is_contiguous(memory_format=fmt)

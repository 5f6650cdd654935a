"""Scan templates (cumsum, cumprod, reverse scans) and CUDA-graph replay.

Scans run under the Triton interpreter and are judged by the real evaluator (float64
reference, poisoned outputs, perturbed inputs); the graph wrapper is checked on the CPU
(fall-through, static checks) and, with the `gpu` marker, by real capture and replay.
"""

from __future__ import annotations

import importlib.util
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from author_util import evaluate, expr_problem, generate, templates_used
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kernelskill.eval.static_checks import run_static_checks

ROOT = Path(__file__).resolve().parents[2]
SCAN_TEMPLATES = {"single-pass-block-scan", "associative-scan-combine", "reverse-scan-index-math"}

def near_one(shape: str) -> str:
    """Signed factors of magnitude near 1: long products stay finite, like the suite's cumprod."""
    return f"(1 + 0.05 * torch.randn({shape})) * torch.where(torch.randn({shape}) >= 0, 1.0, -1.0)"


def check(src: str, template: str | None = None, skill: str | None = None, params: dict | None = None,
          trials: int = 2) -> None:
    cand = generate(src, skill=skill, params=params)
    used = set(templates_used(cand))
    assert used & SCAN_TEMPLATES, f"no scan template used: {used}"
    if template is not None:
        assert template in used, used
    assert run_static_checks(cand.source, fp32_problem="float16" not in src) == []
    result = evaluate(src, cand.source, trials=trials)
    assert result.correct, result.reason
    assert result.custom_kernels >= 1


# ---- the suite ------------------------------------------------------------------------------------------
SUITE = sorted(p for p in ROOT.glob("problems/level*/*.py")
               if any(k in p.read_text() for k in ("cumsum", "cumprod", ".flip", "torch.flip")))


@pytest.mark.parametrize("path", SUITE, ids=[p.stem for p in SUITE])
def test_suite_scan_problems(path: Path) -> None:
    src = path.read_text()
    cand = generate(src)
    assert set(templates_used(cand)) & SCAN_TEMPLATES
    assert "torch.flip" not in cand.source and "torch.cumsum" not in cand.source
    result = evaluate(src, cand.source, trials=2)
    assert result.correct, result.reason
    assert result.custom_kernels >= 1


# ---- shapes, layouts and op variants --------------------------------------------------------------------
VIEWS = {"plain": "x", "t": "x.transpose(0, -1)", "perm": "x.permute({rev})", "slice": "x[..., ::2]"}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shape=st.lists(st.integers(1, 37), min_size=1, max_size=4).filter(lambda s: math.prod(s) <= 3000),
       data=st.data(),
       op=st.sampled_from(["cumsum", "cumprod"]), view=st.sampled_from(sorted(VIEWS)),
       rev=st.sampled_from(["none", "both", "before", "after"]), chain=st.sampled_from(["", "pre", "post"]))
def test_random_scans(shape: list[int], data: st.DataObject, op: str, view: str, rev: str,
                      chain: str) -> None:
    if view == "slice":
        shape[-1] = 2 * shape[-1]
    rank = len(shape)
    dim = data.draw(st.integers(-rank, rank - 1), label="dim")
    x = VIEWS[view].format(rev=", ".join(str(d) for d in reversed(range(rank))))
    if chain == "pre":  # a fused prologue without other operands
        x = f"({x} * 0.5 + 0.5)"
    if rev in ("both", "before"):
        x = f"torch.flip({x}, dims=[{dim}])"
    expr = f"torch.{op}({x}, dim={dim})"
    if rev in ("both", "after"):
        expr = f"{expr}.flip({dim})"
    if chain == "post":  # a fused epilogue
        expr = f"torch.tanh({expr}) * 3"
    dims = ", ".join(map(str, shape))
    inputs = near_one(dims) if op == "cumprod" else f"torch.randn({dims})"
    want = "reverse-scan-index-math" if rev != "none" else None
    check(expr_problem(expr, inputs), template=want)


@pytest.mark.parametrize("shape,dim", [((1, 50), 1), ((50, 1), 1), ((3, 1, 40), 1), ((3, 1, 40), 0),
                                       ((7,), 0), ((5, 130, 3), 1), ((2, 3, 4, 5), 2)])
def test_size_one_and_odd_dims(shape: tuple[int, ...], dim: int) -> None:
    dims = ", ".join(map(str, shape))
    check(expr_problem(f"torch.cumsum(x, dim={dim})", f"torch.randn({dims})"),
          template="single-pass-block-scan")


def test_transposed_rows_scan_as_lanes() -> None:
    # A transposed matrix scanned along its rows: lines are adjacent in memory, so the lane kernel runs.
    check(expr_problem("torch.cumsum(x.t(), dim=1), torch.cumprod(y.t(), dim=1)",
                  f"torch.randn(300, 9), {near_one('200, 11')}", args="x, y"))


def test_reverse_forms_fuse_into_one_op() -> None:
    for expr in ["x.flip(1).cumsum(1).flip(1)", "torch.flip(torch.cumprod(torch.flip(x, [2]), 2), [2])",
                 "torch.cumsum(x.flip(-2), -2)", "torch.cumsum(x, 0).flip(0)",
                 "torch.cumsum(torch.cumsum(x, 1).flip(1), 1)"]:  # one flip, claimed once
        inputs = near_one("4, 33, 5") if "cumprod" in expr else "torch.randn(4, 33, 5)"
        src = expr_problem(expr, inputs)
        cand = generate(src)
        assert "reverse-scan-index-math" in templates_used(cand), expr
        assert "flip(" not in cand.source.split("class ModelNew")[1], expr
        result = evaluate(src, cand.source, trials=1)
        assert result.correct, (expr, result.reason)


def test_flip_of_other_dims_is_not_rewritten() -> None:
    src = expr_problem("torch.flip(torch.cumsum(torch.flip(x, [0, 1]), 1), [0, 1])", "torch.randn(3, 40)")
    cand = generate(src)
    assert "reverse-scan-index-math" not in templates_used(cand)
    result = evaluate(src, cand.source, trials=1)
    assert result.correct, result.reason


# ---- fused prologues and epilogues ------------------------------------------------------------------------
def test_masked_cumsum_fuses_the_mask() -> None:
    src = expr_problem("torch.cumsum(x * mask, dim=1)", "torch.randn(6, 300), torch.rand(6, 300) > 0.5",
                  args="x, mask")
    cand = generate(src)
    assert templates_used(cand) == ["single-pass-block-scan"]  # the multiply is the scan's prologue
    result = evaluate(src, cand.source)
    assert result.correct, result.reason
    assert result.custom_kernels == 1


def test_exclusive_and_affine_epilogues() -> None:
    src = expr_problem("torch.cumsum(x, dim=1) - x", "torch.randn(5, 70, 6)")
    cand = generate(src)
    assert templates_used(cand) == ["single-pass-block-scan"]
    result = evaluate(src, cand.source)
    assert result.correct, result.reason
    assert result.custom_kernels == 1
    src = expr_problem("torch.sigmoid(torch.cumprod(x.flip(2) * self.w, 2).flip(2)) * 2 + self.b",
                  near_one("3, 9, 45"), init="self.w = nn.Parameter(1 + 0.01 * torch.randn(45))\n"
                                             "self.b = nn.Parameter(torch.randn(9, 1))")
    cand = generate(src)
    assert templates_used(cand) == ["reverse-scan-index-math"]
    result = evaluate(src, cand.source)
    assert result.correct, result.reason
    assert result.custom_kernels == 1


def test_half_precision_scan() -> None:
    check(expr_problem("torch.cumsum(x, dim=-1)", "torch.randn(4, 100, dtype=torch.float16)"))


# ---- chunked (two-phase) scans for few long lines -------------------------------------------------------
# Sums over 5000 unit-variance terms have fp32 rounding errors near 1e-4 where the running sum passes
# zero, and PyTorch's CPU cumsum accumulates in float64 (so its own error cannot vouch for ours): the
# long-line inputs are scaled so the fixed 1e-4 tolerance is not a coin flip on the judge's secret seed.
@pytest.mark.parametrize("expr,inputs,skill", [
    ("torch.cumsum(x, dim=1)", "0.25 * torch.randn(2, 5000)", "single-pass-block-scan"),
    ("torch.cumsum(x, dim=1)", "torch.randn(2, 300, 5)", "single-pass-block-scan"),
    ("torch.cumprod(x, dim=0)", near_one("5000"), "associative-scan-combine"),
    ("x.flip(1).cumsum(1).flip(1) - x", "0.25 * torch.randn(3, 5000)", "reverse-scan-index-math"),
    ("torch.cumprod(x.flip(1), 1)", near_one("2, 300, 3"), "reverse-scan-index-math"),
])
def test_chunked_scans(expr: str, inputs: str, skill: str) -> None:
    check(expr_problem(expr, inputs), template=skill, skill=skill, params={"split": "always"}, trials=1)


def test_one_long_line_splits_automatically() -> None:
    # On the CPU the plan sees one "SM": a single line of 20000 is cut into two chunks. A product
    # (relative error) keeps the interpreter's sequential in-block fp32 scan within tolerance.
    src = expr_problem("torch.cumprod(x, dim=0)", near_one("20000"))
    cand = generate(src)
    ns: dict = {}
    exec(compile(cand.source, "<candidate>", "exec"), ns)
    assert ns["_scan_plan"]((20000,), 0, (0, 1, 0), (0, 1, 0), torch.device("cpu"), "auto", [])[7] == 2
    result = evaluate(src, cand.source, trials=1)
    assert result.correct, result.reason


# ---- kernels compile for a real GPU (sm_90) without one --------------------------------------------------
COMPILE = """
import importlib.util, sys
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
spec = importlib.util.spec_from_file_location("scan_cand", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
defaults = {"BLOCK_N": 512, "IP2": 8, "NP2": 64, "VEC": 4, "LINES2D": False, "e_RANK": 2, "p_RANK": 2}
n = 0
for name, tuner in vars(mod).items():
    if not (name.startswith("_scan_") and "kernel" in name):
        continue
    jit, cfg = tuner.fn, tuner.configs[0]
    for var in ({"PHASE": 0, "REV": False, "FLIP": False, "I64": False, "FULL": True},
                {"PHASE": 2, "REV": True, "FLIP": True, "I64": True, "FULL": False}):
        sig, consts = {}, {}
        for a, p in zip(jit.arg_names, jit.params):
            if p.is_constexpr:
                sig[a] = "constexpr"
                consts[a] = cfg.kwargs.get(a, var["FULL"] if "FULL" in a else var.get(a, defaults.get(a)))
            else:
                ptr = a in ("x", "y", "part") or "_in" in a
                sig[a] = "*fp32" if ptr else ("i64" if var["I64"] else "i32")
        k = triton.compile(ASTSource(fn=jit, signature=sig, constexprs=consts),
                           target=GPUTarget("cuda", 90, 32),
                           options={"num_warps": cfg.num_warps, "num_stages": cfg.num_stages})
        assert k.asm["cubin"]
        n += 1
print("compiled", n)
"""


def test_scan_kernels_compile_for_hopper(tmp_path: Path) -> None:
    """Kernel variants the interpreter cannot vet for a GPU (PHASE, REV, FLIP, I64, fused chains)
    compile to sm_90 cubins: no GPU needed, only Triton's NVIDIA backend and its ptxas. In a fresh
    process, since this one imported Triton in interpreter mode."""
    pytest.importorskip("triton.backends.nvidia")
    src = expr_problem("torch.cumsum(x * self.w, dim=1) - x", "torch.randn(4, 300, 6)",
                  init="self.w = nn.Parameter(torch.randn(6))")
    path = tmp_path / "scan_cand.py"
    path.write_text(generate(src).source)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", COMPILE, str(path)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "compiled 4" in done.stdout


def _load(source: str, tmp_path: Path, name: str):  # noqa: ANN202
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ---- CUDA-graph replay ---------------------------------------------------------------------------------
GRAPH = "cuda-graph-replay"


@pytest.mark.parametrize("path", ["level3/01_mlp.py", "level3/08_lstm_cell_loop.py", "level1/29_cumsum.py"])
def test_graph_wrapper_falls_through_on_cpu(path: str) -> None:
    src = (ROOT / "problems" / path).read_text()
    cand = generate(src, skill=GRAPH)
    assert GRAPH in templates_used(cand)
    assert "torch.cuda.graph(graph)" in cand.source and "def _eager_forward(" in cand.source
    assert run_static_checks(cand.source) == []
    result = evaluate(src, cand.source, trials=1)
    assert result.correct, result.reason


HEAD = "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"


def test_graph_wrapper_declines_host_syncs_and_keeps_init() -> None:
    wrap = _wrap()
    assert wrap(HEAD + "    def forward(self, x):\n        return x * (x.sum().item() > 0)\n") is None
    assert wrap(HEAD + "    def forward(self, x):\n        return x[x.nonzero()]\n") is None
    no_init = wrap(HEAD + "    def forward(self, x, k=2):\n        return x * k\n")
    ns: dict = {}
    exec(compile(no_init, "<w>", "exec"), ns)
    m = ns["ModelNew"]()
    assert m._cuda_graphs == {} and torch.equal(m(torch.ones(3)), torch.full((3,), 2.0))
    last_init = wrap(HEAD + "    def forward(self, x):\n        return x + self.b\n\n"
                     "    def __init__(self):\n        super().__init__()\n"
                     "        if True:\n            self.b = nn.Parameter(torch.ones(3))\n")
    ns = {}
    exec(compile(last_init, "<w>", "exec"), ns)
    m = ns["ModelNew"]()
    assert m._cuda_graphs == {} and [n for n, _ in m.named_parameters()] == ["b"]
    assert torch.equal(m(torch.ones(3)), torch.full((3,), 2.0))
    assert run_static_checks(last_init) == [] and run_static_checks(no_init) == []


def test_graph_wrapper_runs_large_inputs_plainly() -> None:
    """Each replay copies the inputs into the graph's buffers and the outputs out of them, so inputs
    plus outputs above 192 MB in total take the plain forward (the copies cost more than replay
    saves); meta tensors hold no memory."""
    from kernelskill.authors.builtin.runtime import GRAPH_REPLAY

    ns: dict = {"torch": torch}
    exec(compile(GRAPH_REPLAY, "<graph helpers>", "exec"), ns)  # noqa: S102  (the wrapper's own helpers)
    small = ns["_graph_small"]
    mb = 1 << 20
    assert small([torch.empty(48 * mb, device="meta")])  # 192 MB of fp32: at the limit
    assert not small([torch.empty(48 * mb + 1, device="meta")])
    assert not small([torch.empty(30 * mb, device="meta"), torch.empty(19 * mb, device="meta")])  # in total
    assert small([torch.empty(90 * mb, dtype=torch.float16, device="meta")])  # bytes, not elements
    out = torch.empty(mb, device="meta")
    assert ns["_graph_tensors"]({"a": (out, [out, 3]), "b": None}) == [out, out]  # nested outputs


def _wrap():  # noqa: ANN202
    from kernelskill.authors.builtin.templates.loader import load_templates

    return lambda s: load_templates()[GRAPH].wrap(s, None)


GRAPH_MODELS = {
    # Only this family's templates (plus the fused elementwise one): a scan between pointwise chains.
    "scan": (expr_problem("torch.sigmoid(torch.cumsum(torch.relu(x) - 0.5, dim=1).flip(1)) * 2",
                     "torch.randn(9, 40)"), ()),
    "mlp": ((ROOT / "problems" / "level3/01_mlp.py").read_text(), (40, [66, 66, 33], 10)),
}


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(GRAPH_MODELS))
def test_graph_replay_on_gpu(name: str, tmp_path: Path) -> None:
    src, init = GRAPH_MODELS[name]
    cand = generate(src, skill=GRAPH)
    assert GRAPH in templates_used(cand)
    mod = _load(cand.source, tmp_path, f"graph_cand_{name}")
    sys.modules.pop(f"graph_cand_{name}", None)
    torch.manual_seed(0)
    model = mod.ModelNew(*init).cuda()
    with torch.no_grad():
        xs = [torch.randn(9, 40, device="cuda") for _ in range(3)]
        outs = [model(x) for x in xs]
        assert len(model._cuda_graphs) == 1
        for x, out in zip(xs, outs, strict=True):  # every call computed on its own input, kept intact
            torch.testing.assert_close(out, model._eager_forward(x), rtol=1e-5, atol=1e-5)
        model(torch.randn(5, 40, device="cuda"))
        model(torch.randn(40, 9, device="cuda").t())
        assert len(model._cuda_graphs) == 3  # a new shape and a new stride signature
        model(xs[0].cpu().cuda())
        assert len(model._cuda_graphs) == 3
        assert all(entry is not False for entry in model._cuda_graphs.values())  # small: replayed
    torch.testing.assert_close(model(xs[0]), model._eager_forward(xs[0]))  # grad enabled: no graph
    assert len(model._cuda_graphs) == 3


STREAM = expr_problem("torch.relu(x) * 2.0", "torch.randn(4096, 8192)")


@pytest.mark.gpu
def test_graph_replay_is_declined_where_copies_cost_more_than_it_saves(tmp_path: Path) -> None:
    """One memory-bound kernel with 128 MB in and 128 MB out: copying both through the graph's
    buffers would triple the traffic, so the signature is marked plain after the first call."""
    cand = generate(STREAM, skill=GRAPH)
    mod = _load(cand.source, tmp_path, "graph_cand_stream")
    sys.modules.pop("graph_cand_stream", None)
    model = mod.ModelNew().cuda()
    with torch.no_grad():
        for _ in range(2):
            x = torch.randn(4096, 8192, device="cuda")
            torch.testing.assert_close(model(x), torch.relu(x) * 2.0)
        assert list(model._cuda_graphs.values()) == [False]


BN_MODEL = expr_problem("torch.relu(self.bn(self.lin(x)))", "torch.randn(9, 40)",
                   init="self.lin = nn.Linear(40, 24)\nself.bn = nn.BatchNorm1d(24)")


@pytest.mark.gpu
def test_graph_replay_updates_running_statistics_once_per_call(tmp_path: Path) -> None:
    """Warm-up before capture runs the forward once more; the buffers it touched are restored, so
    a training-mode norm's running statistics match eager's after every call."""
    cand = generate(BN_MODEL, skill=GRAPH)
    assert GRAPH in templates_used(cand)
    mod = _load(cand.source, tmp_path, "graph_cand_bn")
    ref_mod = _load(BN_MODEL, tmp_path, "graph_ref_bn")
    sys.modules.pop("graph_cand_bn", None)
    sys.modules.pop("graph_ref_bn", None)
    torch.manual_seed(0)
    model = mod.ModelNew().cuda()
    torch.manual_seed(0)
    ref = ref_mod.Model().cuda()
    with torch.no_grad():
        for _ in range(3):
            x = torch.randn(9, 40, device="cuda")
            torch.testing.assert_close(model(x), ref(x), rtol=1e-4, atol=1e-4)
            torch.testing.assert_close(model.bn.running_mean, ref.bn.running_mean, rtol=1e-5, atol=1e-6)
            torch.testing.assert_close(model.bn.running_var, ref.bn.running_var, rtol=1e-5, atol=1e-6)
        assert len(model._cuda_graphs) == 1
        assert int(model.bn.num_batches_tracked) == int(ref.bn.num_batches_tracked) == 3


BIG_OUT = expr_problem("torch.relu(x @ self.w)", "torch.randn(8192, 64)",
                  init="self.w = nn.Parameter(torch.randn(64, 16400))")


@pytest.mark.gpu
def test_graph_replay_leaves_large_outputs_to_the_plain_forward(tmp_path: Path) -> None:
    """A 538 MB output would be copied out of the graph on every call: its signature is marked
    plain after the first call (whose result is the warm-up's), and later calls run eagerly."""
    cand = generate(BIG_OUT, skill=GRAPH)
    mod = _load(cand.source, tmp_path, "graph_cand_big")
    sys.modules.pop("graph_cand_big", None)
    torch.manual_seed(0)
    model = mod.ModelNew().cuda()
    with torch.no_grad():
        for _ in range(2):
            x = torch.randn(8192, 64, device="cuda")
            torch.testing.assert_close(model(x), model._eager_forward(x), rtol=1e-5, atol=1e-5)
        assert list(model._cuda_graphs.values()) == [False]


GPU_SCANS = [
    ("torch.cumsum(x, dim=1)", "torch.randn(2000, 33000)"),
    ("torch.cumprod(x, dim=1)", near_one("6000, 8960")),
    ("torch.flip(torch.cumsum(torch.flip(x, dims=[1]), dim=1), dims=[1])", "torch.randn(8, 8000, 1024)"),
    ("torch.cumsum(x, dim=1)", "torch.randn(4, 4_000_000)"),  # few long lines: chunked
    ("torch.cumprod(x, dim=0)", near_one("3_000_000")),
    ("torch.cumsum(x.t(), dim=1)", "torch.randn(30000, 300)"),  # transposed: lane kernel
    ("torch.cumsum(x * (m > 0), dim=-1) - x", "torch.randn(1000, 5000), torch.randn(1000, 5000)"),
]


@pytest.mark.gpu
@pytest.mark.parametrize("expr,inputs", GPU_SCANS, ids=[f"gpu{i}" for i in range(len(GPU_SCANS))])
def test_scans_on_gpu(expr: str, inputs: str, tmp_path: Path) -> None:
    """Real kernels, autotuning and chunking at large sizes, judged and timed by the evaluator
    (eager and torch.compile baselines included: the speedups are in the printed result)."""
    from kernelskill.eval.worker import Worker

    src = expr_problem(expr, inputs, args="x, m" if ", torch" in inputs else "x")
    cand = generate(src)
    req = {"problem_source": src, "candidate_source": cand.source, "problem_name": "scan",
           "candidate_name": "scan_cand", "options": {"device": "cuda", "size": "full", "trials": 2}}
    result = Worker(req, tmp_path / "progress").run()
    print(expr, inputs, result.runtime_ms, result.eager_ms, result.compile_ms, result.floor_ms)
    assert result.correct, result.reason
    assert result.custom_kernels >= 1

"""Problem sources, hypothesis strategies and a family-only author for the convolution and
pooling template tests (test_conv_pool.py).

Candidates come from an author holding only this family's templates (plus the elementwise
chain), so the tests exercise exactly these templates whatever other families do.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch
from author_util import evaluate, problem, templates_used
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from kernelskill.authors.base import AuthorTask
from kernelskill.authors.builtin.author import BuiltinAuthor
from kernelskill.authors.builtin.families.pointwise.template import FusedElementwise
from kernelskill.authors.builtin.templates.loader import load_templates
from kernelskill.eval.problem import load_problem
from kernelskill.eval.static.checks import run_static_checks
from kernelskill.state.records import Candidate, Plan

FAMILY = ("fused-pooling-window", "global-pool-as-row-reduction", "vendor-conv-fused-tail",
          "depthwise-conv-direct", "conv-implicit-gemm", "conv3d-implicit-gemm", "pointwise-conv-as-gemm",
          "conv-transpose-gather", "channels-last-layout")
PROBLEMS = Path(__file__).resolve().parents[2] / "problems"
_AUTHOR: BuiltinAuthor | None = None
SLOW = settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def author() -> BuiltinAuthor:
    global _AUTHOR
    if _AUTHOR is None:
        loaded = load_templates()
        _AUTHOR = BuiltinAuthor({"fuse-elementwise-chain": FusedElementwise(),
                                 **{k: loaded[k] for k in FAMILY}})
    return _AUTHOR


def generate(src: str, skill: str | None = None, precision: str = "strict", **params: object) -> Candidate:
    """The built-in author's candidate; `strict` by default, the policy under which our convolution
    kernels must be fp32-accurate (under `default` they may run one TF32 pass, as cuDNN does)."""
    task = AuthorTask(problem=problem(src), device="cpu", precision=precision)
    first = author().generate(task)
    if skill is None:
        return first
    task.best = first
    return author().apply(task, Plan(skill_id=skill, params=params))


def check(src: str, skill: str | None = None, expect: str | None = None, kernels: int = 1,
          trials: int = 1) -> Candidate:
    cand = generate(src, skill)
    used = templates_used(cand)
    if expect is not None:
        assert expect in used, (used, cand.source)
    assert not run_static_checks(cand.source), run_static_checks(cand.source)
    result = evaluate(src, cand.source, trials=trials)
    assert result.correct, f"{result.reason}\n{cand.source}"
    assert result.custom_kernels >= kernels, cand.source
    return cand


def load_candidate(source: str, path: Path):  # noqa: ANN201
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"conv_pool_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_CL_FORMATS = {4: torch.channels_last, 5: torch.channels_last_3d}


def spy_conversions(module) -> list[tuple[int, bool]]:  # noqa: ANN001
    """Wrap a loaded candidate's _cv_relayout; the list it returns gets, per call to a channels-last
    format, (the input's rank, whether it had to be converted: not channels-last already)."""
    calls: list[tuple[int, bool]] = []
    relayout = module._cv_relayout

    def spy(x: torch.Tensor, fmt: torch.memory_format, plans: dict) -> torch.Tensor:
        if fmt == _CL_FORMATS.get(x.dim()):
            calls.append((x.dim(), not x.is_contiguous(memory_format=fmt)))
        return relayout(x, fmt, plans)
    module._cv_relayout = spy
    return calls


HEAD = '''
import torch
import torch.nn as nn
import torch.nn.functional as F
SMALL = {}
'''


def shape_str(shape: tuple[int, ...]) -> str:
    return ", ".join(str(s) for s in shape)


# ---- window pooling ------------------------------------------------------------------------

POOL = '''
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = {layer}
        self.scale = nn.Parameter(torch.randn({cshape}))
        self.shift = nn.Parameter(torch.randn({cshape}))
    def forward(self, x):
        x = {view}
        {pre}
        y = {call}
        {post}
        return y
def get_inputs():
    return [torch.randn({xshape})]
def get_init_inputs():
    return []
'''


def pool_source(kind: str, dims: int, spatial: tuple[int, ...], k: tuple, s: tuple, p: tuple, dil: tuple,
                ceil: bool, cip: bool = True, divisor: int | None = None, lead: tuple = (2, 3),
                transpose: bool = False, pre: bool = False, post: bool = False,
                functional: bool = False) -> str:
    shape = (*lead, *spatial)
    xshape = (*shape[:-2], shape[-1], shape[-2]) if transpose else shape
    cshape = (lead[-1],) + (1,) * dims
    name = f"{'Max' if kind == 'max' else 'Avg'}Pool{dims}d"
    if kind == "max":
        args = f"{k}, stride={s}, padding={p}, dilation={dil}, ceil_mode={ceil}"
    else:
        args = f"{k}, stride={s}, padding={p}, ceil_mode={ceil}, count_include_pad={cip}"
        if dims > 1:
            args += f", divisor_override={divisor}"
    layer = "nn.Identity()" if functional else f"nn.{name}({args})"
    call = f"F.{name.lower().replace('pool', '_pool')}(x, {args})" if functional else "self.pool(x)"
    return HEAD + POOL.format(layer=layer, call=call, cshape=shape_str(cshape), xshape=shape_str(xshape),
                       view="x.transpose(-1, -2)" if transpose else "x",
                       pre="x = F.relu(x * self.scale)" if pre else "",
                       post="y = torch.sigmoid(y) * self.shift + 0.5" if post else "")


@st.composite
def pool_case(draw: st.DrawFn) -> dict:
    dims = draw(st.integers(1, 3))
    kind = draw(st.sampled_from(["max", "avg"]))
    k = tuple(draw(st.integers(1, 3)) for _ in range(dims))
    s = tuple(draw(st.integers(1, 3)) for _ in range(dims))
    p = tuple(draw(st.integers(0, kk // 2)) for kk in k)
    dil = tuple(draw(st.integers(1, 2)) for _ in range(dims)) if kind == "max" else (1,) * dims
    spatial = tuple(draw(st.integers((kk - 1) * d + 1, (kk - 1) * d + 7))
                    for kk, d in zip(k, dil, strict=True))
    return dict(kind=kind, dims=dims, spatial=spatial, k=k, s=s, p=p, dil=dil, ceil=draw(st.booleans()),
                cip=draw(st.booleans()), divisor=draw(st.sampled_from([None, 5])),
                lead=draw(st.sampled_from([(2, 3), (1, 5), (4,)])), transpose=draw(st.booleans()),
                pre=draw(st.booleans()), post=draw(st.booleans()), functional=draw(st.booleans()))


# ---- global pooling ------------------------------------------------------------------------

GLOBAL = '''
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gap = nn.AdaptiveAvgPool{dims}d({out})
        self.scale = nn.Parameter(torch.randn({cshape}))
    def forward(self, x):
        x = {view}
        {pre}
        y = {call}
        {post}
        return y{flat}
def get_inputs():
    return [torch.randn({xshape})]
def get_init_inputs():
    return []
'''


# ---- convolutions: vendor + fused epilogue, implicit GEMM, depthwise, transposed ---------------

CONV = '''
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.{cls}({cin}, {cout}, {k}, stride={s}, padding={p}, dilation={dil}, groups={g},
                              bias={bias}{extra})
        self.scale = nn.Parameter(1.0 + 0.5 * torch.randn({cshape}))
        self.rows = nn.Parameter(torch.randn({rows}, 1))
    def forward(self, x, r):
        x = {view}
        {pre}
        y = self.conv(x)
        {post}
        return y
def get_inputs():
    return [torch.randn({xshape}), torch.randn({rshape})]
def get_init_inputs():
    return []
'''

POSTS = {"none": "",
         "act": "y = torch.tanh(y * self.scale) * 1.5",
         "residual": "y = F.relu(y - self.scale) + r",
         "rows": "y = F.leaky_relu(y + self.rows, 0.1)"}  # broadcast over one spatial dim only


def conv_source(dims: int, cin: int, cout: int, k: tuple, s: tuple, p: tuple, dil: tuple, g: int, bias: bool,
                lead: tuple, spatial: tuple, transposed: bool = False, op: tuple | None = None,
                view: bool = False, pre: str = "", post: str = "none") -> str:
    cls = f"ConvTranspose{dims}d" if transposed else f"Conv{dims}d"
    extra = f", output_padding={op}" if transposed and op else ""
    shape = (*lead, cin, *spatial)
    module = getattr(torch.nn, cls)(cin, cout, k, stride=s, padding=p, dilation=dil, groups=g, bias=bias,
                                    **({"output_padding": op} if extra else {}))
    oshape = tuple(module(torch.zeros(shape)).shape)
    xshape = (*shape[:-2], shape[-1], shape[-2]) if view else shape
    return HEAD + CONV.format(cls=cls, cin=cin, cout=cout, k=k, s=s, p=p, dil=dil, g=g, bias=bias,
                              extra=extra, cshape=shape_str((cout,) + (1,) * dims),
                              rows=oshape[-2] if dims > 1 else 1, view="x.transpose(-1, -2)" if view else "x",
                              pre=pre, post=POSTS[post], xshape=shape_str(xshape), rshape=shape_str(oshape))


@st.composite
def conv_case(draw: st.DrawFn, transposed: bool = False, depthwise: bool = False) -> dict:
    dims = draw(st.integers(1, 3))
    g = draw(st.integers(1, 3))
    cin = g * draw(st.integers(1, 3))
    cout = g * draw(st.integers(1, 3))
    if depthwise:
        g, cin = cin, cin
        cout = cin * draw(st.integers(1, 2))
    k = tuple(draw(st.integers(1, 3)) for _ in range(dims))
    s = tuple(draw(st.integers(1, 3 if dims < 3 else 2)) for _ in range(dims))
    dil = tuple(draw(st.integers(1, 2)) for _ in range(dims))
    p = tuple(draw(st.integers(0, (kk - 1) * d)) for kk, d in zip(k, dil, strict=True))
    op = None
    if transposed:  # output_padding < max(stride, dilation); the output size must stay >= 1
        op = tuple(draw(st.integers(0, max(ss, d) - 1)) for ss, d in zip(s, dil, strict=True))
        lo = [1 + max(0, -(-(2 * pp - d * (kk - 1)) // ss))
              for kk, d, pp, ss in zip(k, dil, p, s, strict=True)]
    else:
        lo = [max(1, (kk - 1) * d + 1 - 2 * pp) for kk, d, pp in zip(k, dil, p, strict=True)]
    spatial = tuple(draw(st.integers(lo_, lo_ + 6 - 2 * dims)) for lo_ in lo)  # interpreter time ~ volume
    return dict(dims=dims, cin=cin, cout=cout, k=k, s=s, p=p, dil=dil, g=g, bias=draw(st.booleans()),
                lead=draw(st.sampled_from([(2,), (1,), ()])), spatial=spatial, transposed=transposed, op=op,
                view=draw(st.booleans()), post=draw(st.sampled_from(sorted(POSTS))))


# ---- index paths no small shape reaches ----------------------------------------------------

_GLOBAL_T = HEAD + GLOBAL.format(dims=2, out="1", cshape="3, 1, 1", xshape="2, 3, 7, 5",
                                 view="x.transpose(-1, -2)", pre="x = torch.sigmoid(x) * self.scale",
                                 call="self.gap(x)", post="y = F.relu(y - self.scale)", flat="")
_CONV_ROWS = dict(dims=2, cin=4, cout=6, k=(3, 2), s=(2, 1), p=(1, 1), dil=(1, 2), g=2, bias=True, lead=(2,),
                  spatial=(7, 6), view=True, post="rows")
INDEX_CASES = {
    "pool": (pool_source("avg", 2, (7, 9), (3, 2), (2, 2), (1, 1), (1, 1), True, cip=False, transpose=True,
                         pre=True, post=True), None, "fused-pooling-window"),
    "global": (_GLOBAL_T, None, "global-pool-as-row-reduction"),
    "vendor": (conv_source(**_CONV_ROWS), None, "vendor-conv-fused-tail"),
    "depthwise": (conv_source(**{**_CONV_ROWS, "g": 4, "cout": 8, "pre": "x = torch.clamp(x, -0.5, 1.0)"}),
                  None, "depthwise-conv-direct"),
    "gemm": (conv_source(**_CONV_ROWS), "conv-implicit-gemm", "conv-implicit-gemm"),
    "transposed": (conv_source(**{**_CONV_ROWS, "transposed": True, "op": (1, 0), "post": "residual"}),
                   "conv-transpose-gather", "conv-transpose-gather"),
}


# ---- GPU code generation, checked without a GPU ------------------------------------------------

# Runs in a fresh process: under TRITON_INTERPRET=1 Triton's own library functions (tl.cdiv,
# tl.sigmoid ...) are interpreter objects that cannot be compiled.
COMPILE_SCRIPT = """
import importlib.util, json, sys
import torch, triton
from triton.backends.compiler import GPUTarget
from kernelskill.eval.problem import load_problem

TYPES = {torch.float32: "fp32", torch.float64: "fp64", torch.float16: "fp16", torch.bool: "i1",
         torch.int64: "i64"}


def ty(v):
    if isinstance(v, torch.Tensor):
        return "*" + TYPES[v.dtype]
    if isinstance(v, bool):
        return "i1"
    if isinstance(v, int):
        return "i32" if -2**31 <= v < 2**31 else "i64"
    return "fp32"


class Recorder:  # stands in for an autotuned kernel: records the launch instead of running it
    def __init__(self, tuner, calls):
        self.tuner, self.calls = tuner, calls

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.calls.append((self.tuner, args, kwargs))


# Plain (not autotuned) launches, such as the weight's TF32 split before a strict-fp32 conv, would
# need a GPU driver: skip them, their outputs are only passed on.
triton.runtime.jit.JITFunction.run = lambda self, *args, **kwargs: None
out = {}
for problem_path, cand_path in json.loads(sys.argv[1]):
    spec = importlib.util.spec_from_file_location("cand_" + str(len(out)), cand_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    calls = []
    for name, obj in list(vars(module).items()):
        if isinstance(obj, triton.runtime.autotuner.Autotuner):
            setattr(module, name, Recorder(obj, calls))
    prob = load_problem(open(problem_path).read(), "small", problem_path)
    model = module.ModelNew(*prob.get_init_inputs())
    with torch.no_grad():
        model(*prob.get_inputs())
    for tuner, args, kwargs in calls:
        fn, cfg = tuner.fn, tuner.configs[0]
        consts = {**kwargs, **cfg.kwargs}
        sig = {n: "constexpr" if fn.params[i].is_constexpr else ty(args[i])
               for i, n in enumerate(fn.arg_names)}
        src = triton.compiler.ASTSource(fn, sig, {n: v for n, v in consts.items() if n in sig})
        k = triton.compile(src, target=GPUTarget("cuda", 90, 32),
                           options={"num_warps": cfg.num_warps, "num_stages": cfg.num_stages})
        out[fn.__name__ + "@" + cand_path] = k.metadata.shared
print(json.dumps(out))
"""


def same_run(src: str, source: str, path: Path, inputs: list[torch.Tensor] | None = None) -> set[int]:
    """Two calls of the candidate and of the reference from one state: outputs and buffers agree
    (running statistics move once per call). Returns the paths the norm launchers planned
    (runtime/norms.py's _nrm_plan: 4 and 5 read a channels-last x)."""
    prob = load_problem(src, "small", "<p>")
    module = load_candidate(source, path)
    torch.manual_seed(0)
    ref = prob.model_cls(*prob.get_init_inputs())
    new = module.ModelNew(*prob.get_init_inputs())
    new.load_state_dict(ref.state_dict())
    args = inputs or prob.get_inputs()
    with torch.no_grad():
        for _ in range(2):
            torch.testing.assert_close(new(*args), ref(*args), rtol=1e-4, atol=1e-4)
    for name, buf in ref.named_buffers():
        torch.testing.assert_close(dict(new.named_buffers())[name], buf, rtol=1e-5, atol=1e-6)
    return {plan[1] for name, cache in vars(module).items() if name.startswith("_plans")
            for plan in cache.values() if plan}

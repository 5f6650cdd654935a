"""Convolutions under the `default` precision policy (TF32 cuDNN convolutions on both sides): the
first candidate is the vendor convolution in the layout channels-last-layout's rule picks, with
its tail fused into one strided pass, replayed as a CUDA graph; under `strict` the choices stay
vendor-conv-fused-tail's (NCHW, no replay). Runs under the interpreter on CPU, where
channels-last tensors and F.conv*d on them work as on the GPU.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest
import torch
from author_util import evaluate, problem, templates_used
from conv_pool_cases import (
    COMPILE_SCRIPT,
    HEAD,
    conv_source,
    generate,
    load_candidate,
    same_run,
)
from kernelskill.authors.base import AuthorTask
from kernelskill.authors.builtin.author import BuiltinAuthor
from kernelskill.authors.builtin.families.conv_pool.layout import CHANNELS_LAST_DIMS
from kernelskill.eval.problem import load_problem
from kernelskill.eval.static.checks import run_static_checks


def _cl(t: torch.Tensor, only: bool = True) -> bool:
    """Channels-last; with `only`, and not also NCHW-contiguous (the two coincide when C or the
    spatial size is 1, as for a 1x1 weight)."""
    fmt = {4: torch.channels_last, 5: torch.channels_last_3d}.get(t.dim())
    return fmt is not None and t.is_contiguous(memory_format=fmt) and not (only and t.is_contiguous())


class _ConvSpy:
    """Stands in for `F` in a candidate module: records, per vendor convolution call, whether its
    input and weight arrived channels-last."""

    def __init__(self, real: types.ModuleType):
        self.real, self.calls = real, []

    def __getattr__(self, name: str):  # noqa: ANN204
        fn = getattr(self.real, name)
        if not name.startswith("conv"):
            return fn

        def call(x, w, *args, **kwargs):  # noqa: ANN001, ANN202
            self.calls.append((name, _cl(x), _cl(w, only=False)))
            return fn(x, w, *args, **kwargs)
        return call


def run_spied(src: str, source: str, tmp: Path) -> tuple[list, dict[str, list[bool]], object]:
    """Run the candidate once at the problem's small size: its convolution calls, whether each
    layout launcher returned channels-last, and the forward's output."""
    module = load_candidate(source, tmp / "cand.py")
    spy = _ConvSpy(module.F)
    module.F = spy
    returned: dict[str, list[bool]] = {}
    for name, fn in list(vars(module).items()):
        if name.startswith("_vendor_conv_layout_") and callable(fn):
            def wrapped(*args, _fn=fn, _name=name):  # noqa: ANN002, ANN202
                out = _fn(*args)
                returned.setdefault(_name, []).append(_cl(out))
                return out
            setattr(module, name, wrapped)
    prob = load_problem(src, "small", "<p>")
    model = module.ModelNew(*prob.get_init_inputs())
    with torch.no_grad():
        out = model(*prob.get_inputs())
    return spy.calls, returned, out


# ---- chosen cases: 2D, 3D, transposed, grouped, 1D, norm and pooling tails ---------------------

_BASE = dict(dims=2, cin=4, cout=6, k=(3, 3), s=(1, 1), p=(1, 1), dil=(1, 1), g=1, bias=True, lead=(2,),
             spatial=(7, 6), post="act")
_NORM_POOL = HEAD + '''
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(3, 8, 3, padding=1)
        self.norm = nn.GroupNorm(2, 8)
        self.pool = nn.MaxPool3d(2)
    def forward(self, x):
        return self.pool(F.silu(self.norm(self.conv(x))))
def get_inputs():
    return [torch.randn(2, 3, 5, 6, 4)]
def get_init_inputs():
    return []
'''
# name -> (source, the rank of a convolution the rule sends channels-last when that rank is in
# CHANNELS_LAST_DIMS; 0 for one it never does)
CASES = {
    "conv2d": (conv_source(**_BASE), 2),
    "conv2d_residual_view": (conv_source(**{**_BASE, "post": "residual", "view": True, "spatial": (6, 7)}),
                             2),
    "conv3d": (conv_source(**{**_BASE, "dims": 3, "k": (3, 2, 3), "s": (1, 2, 1), "p": (1, 0, 1),
                              "dil": (1, 1, 1), "spatial": (4, 5, 3)}), 3),
    "transposed2d": (conv_source(**{**_BASE, "transposed": True, "s": (2, 2), "op": (1, 0), "post": "rows"}),
                     2),
    "grouped": (conv_source(**{**_BASE, "g": 2}), 0),
    "conv1d": (conv_source(**{**_BASE, "dims": 1, "k": (3,), "s": (1,), "p": (1,), "dil": (1,),
                              "spatial": (9,)}), 0),
    "unbatched": (conv_source(**{**_BASE, "lead": ()}), 0),
    "norm_pool_3d": (_NORM_POOL, 3),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_default_candidate_takes_the_layout_rule(name: str, tmp_path: Path) -> None:
    src, rank = CASES[name]
    channels_last = rank in CHANNELS_LAST_DIMS
    cand = BuiltinAuthor().generate(AuthorTask(problem=problem(src), device="cpu", precision="default"))
    used = templates_used(cand)
    assert "channels-last-layout" in used and "cuda-graph-replay" in used, used
    assert "vendor-conv-fused-tail" not in used, used
    assert not run_static_checks(cand.source, precision="default"), run_static_checks(cand.source)
    result = evaluate(src, cand.source, trials=2, precision="default")
    assert result.correct, f"{result.reason}\n{cand.source}"
    calls, returned, out = run_spied(src, cand.source, tmp_path)
    assert [(x, w) for _, x, w in calls] == [(channels_last, channels_last)], calls
    # The reference's layout, but for a group norm's input, which the norm reads channels-last.
    kept = name == "norm_pool_3d" and channels_last
    assert all(cl == kept for cls in returned.values() for cl in cls), returned
    assert out.is_contiguous()


@pytest.mark.parametrize("name", ["conv2d", "transposed2d", "conv1d"])
def test_strict_candidate_is_unchanged(name: str, tmp_path: Path) -> None:
    """Under strict the vendor call stays NCHW in vendor-conv-fused-tail, without graph replay."""
    src, _ = CASES[name]
    cand = BuiltinAuthor().generate(AuthorTask(problem=problem(src), device="cpu", precision="strict"))
    used = templates_used(cand)
    assert "vendor-conv-fused-tail" in used and "channels-last-layout" not in used, used
    assert "cuda-graph-replay" not in used and "channels_last" not in cand.source
    assert evaluate(src, cand.source, trials=1, precision="strict").correct
    calls, _, _ = run_spied(src, cand.source, tmp_path)
    assert [(x, w) for _, x, w in calls] == [(False, False)], calls


_STACK = HEAD + '''
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.c2 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.c3 = nn.Conv2d(8, 5, 1)
    def forward(self, x):
        y = F.relu(self.c1(x))
        y = self.c2(y)
        return torch.sigmoid(self.c3(y)) * 2.0
def get_inputs():
    return [torch.randn(2, 3, 9, 7)]
def get_init_inputs():
    return []
'''


def test_conv_stack_stays_channels_last_between_layers(tmp_path: Path) -> None:
    """Outputs read only by the next channels-last convolution stay NHWC (the next call's
    conversion is then a no-op); the forward's output is written in the reference's layout."""
    if 2 not in CHANNELS_LAST_DIMS:
        pytest.skip("the channels-last rule is turned off for 2-D convolutions (CHANNELS_LAST_DIMS)")
    cand = BuiltinAuthor().generate(AuthorTask(problem=problem(_STACK), device="cpu", precision="default"))
    assert evaluate(_STACK, cand.source, trials=2, precision="default").correct
    calls, returned, out = run_spied(_STACK, cand.source, tmp_path)
    assert [(x, w) for _, x, w in calls] == [(True, True)] * 3, calls
    kept = [cls[0] for _, cls in sorted(returned.items(), key=lambda kv: int(kv[0].rsplit("_", 1)[1]))]
    assert kept == [True, True, False], returned  # c1 (with its relu), c2 (no tail), c3 (last)
    assert out.is_contiguous()


_CONV_BN = HEAD + '''
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 6, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(6)
        self.c2 = nn.Conv3d(2, 5, 3, padding=1)
        self.bn3 = nn.BatchNorm3d(5, momentum=None)
    def forward(self, x, z):
        return torch.relu(self.bn(self.c1(x))), self.bn3(self.c2(z))
def get_inputs():
    return [torch.randn(2, 3, 9, 7), torch.randn(2, 2, 3, 4, 5)]
def get_init_inputs():
    return []
'''
_BN_EVAL = HEAD + '''
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm2d(6).eval()
        self.bn.running_mean.normal_()
        self.bn.running_var.uniform_(0.5, 2.0)
    def forward(self, x):
        return self.bn(x)
def get_inputs():
    return [torch.randn(2, 6, 5, 7)]
def get_init_inputs():
    return []
'''


def test_batch_norm_reads_the_conv_output_channels_last(tmp_path: Path) -> None:
    """A convolution whose output only a batch norm reads leaves it channels-last (no copy back
    to NCHW): the norm reads it in place (statistics, the running-statistics update, 2-D and
    3-D) and writes the reference's NCHW layout. In eval mode it applies the running statistics
    to a channels-last input the same way."""
    if CHANNELS_LAST_DIMS != (2, 3):
        pytest.skip("the channels-last rule is not on for 2-D and 3-D convolutions (CHANNELS_LAST_DIMS)")
    cand = BuiltinAuthor().generate(AuthorTask(problem=problem(_CONV_BN), device="cpu", precision="default"))
    assert "two-level-norm-statistics" in templates_used(cand), templates_used(cand)
    result = evaluate(_CONV_BN, cand.source, trials=2, precision="default")
    assert result.correct, f"{result.reason}\n{cand.source}"
    calls, returned, (y, u) = run_spied(_CONV_BN, cand.source, tmp_path)
    assert [(x, w) for _, x, w in calls] == [(True, True)] * 2, calls
    assert all(cls == [True] for cls in returned.values()) and len(returned) == 2, returned
    assert y.is_contiguous() and u.is_contiguous()
    assert same_run(_CONV_BN, cand.source, tmp_path / "again.py") == {4}  # statistics, channels-last
    cand = BuiltinAuthor().generate(AuthorTask(problem=problem(_BN_EVAL), device="cpu", precision="default"))
    assert "two-level-norm-statistics" in templates_used(cand), templates_used(cand)
    x = torch.randn(2, 6, 5, 7).contiguous(memory_format=torch.channels_last)
    assert same_run(_BN_EVAL, cand.source, tmp_path / "eval.py", [x]) == {5}  # running, channels-last
    assert same_run(_BN_EVAL, cand.source, tmp_path / "eval_nchw.py") == {3}


_CONV_BN_CONV = HEAD + '''
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 6, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(6)
        self.c2 = nn.Conv2d(6, 5, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(5)
        self.c3 = nn.Conv3d(2, 4, 3, padding=1, bias=False)
        self.bn3 = nn.BatchNorm3d(4)
        self.c4 = nn.Conv3d(4, 3, 1)
    def forward(self, x, z):
        y = torch.relu(self.bn1(self.c1(x)))
        v = torch.relu(self.bn3(self.c3(z)))
        return torch.relu(self.bn2(self.c2(y))), self.c4(v)
def get_inputs():
    return [torch.randn(2, 3, 9, 7), torch.randn(2, 2, 3, 4, 5)]
def get_init_inputs():
    return []
'''


def test_batch_norm_read_only_by_a_conv_stays_channels_last(tmp_path: Path) -> None:
    """conv -> batch norm -> relu -> conv, 2-D and 3-D: a norm's apply keeps the channels-last
    layout it read where its one reader is a convolution (which would convert it), so that
    convolution's input needs no transpose; a norm whose output is returned writes NCHW."""
    if CHANNELS_LAST_DIMS != (2, 3):
        pytest.skip("the channels-last rule is not on for 2-D and 3-D convolutions (CHANNELS_LAST_DIMS)")
    task = AuthorTask(problem=problem(_CONV_BN_CONV), device="cpu", precision="default")
    cand = BuiltinAuthor().generate(task)
    assert "two-level-norm-statistics" in templates_used(cand), templates_used(cand)
    result = evaluate(_CONV_BN_CONV, cand.source, trials=2, precision="default")
    assert result.correct, f"{result.reason}\n{cand.source}"
    module = load_candidate(cand.source, tmp_path / "cand.py")
    seen: list[bool] = []  # per conversion to channels-last: was the input already channels-last?
    relayout = module._cv_relayout
    module._cv_relayout = lambda x, fmt, plans: (seen.append(_cl(x)), relayout(x, fmt, plans))[1]
    norms: list[bool] = []  # per norm call: did it return channels-last?
    for name, fn in list(vars(module).items()):
        if name.startswith("_batch_norm") and callable(fn):
            def wrapped(*args, _fn=fn):  # noqa: ANN002, ANN202
                out = _fn(*args)
                norms.append(_cl(out))
                return out
            setattr(module, name, wrapped)
    prob = load_problem(_CONV_BN_CONV, "small", "<p>")
    with torch.no_grad():
        out = module.ModelNew(*prob.get_init_inputs())(*prob.get_inputs())
    assert all(o.is_contiguous() for o in out)
    assert sorted(norms) == [False, True, True], norms  # the inner norms' outputs channels-last
    assert sorted(seen) == [False, False, True, True], seen  # the inner convs' inputs arrived so
    assert same_run(_CONV_BN_CONV, cand.source, tmp_path / "again.py") == {4}
    # The launchers' norm parameters end with keep_nhwc: under `strict` convolutions stay NCHW.
    keep = re.compile(r"\(1e-05, True, 0\.1, (True|False)\)\)")
    assert sorted(keep.findall(cand.source)) == ["False", "True"]  # one launcher serves both inner norms
    cand = BuiltinAuthor().generate(dataclasses.replace(task, precision="strict"))
    # bn2's launcher also takes c2's bias (norms/absorb.py), so it is not bn1's and bn3's
    assert keep.findall(cand.source) == ["False", "False"]


def test_layout_parameter_forces_nchw(tmp_path: Path) -> None:
    """The planner may pin the layout: `layout="contiguous"` keeps the call NCHW, still correct."""
    src, _ = CASES["conv2d"]
    cand = generate(src, "channels-last-layout", precision="default", layout="contiguous")
    assert evaluate(src, cand.source, trials=1, precision="default").correct
    calls, _, _ = run_spied(src, cand.source, tmp_path)
    assert [(x, w) for _, x, w in calls] == [(False, False)], calls


def test_layout_kernels_compile_for_sm90(tmp_path: Path) -> None:
    """NHWC -> NCHW (one conv), NHWC -> NHWC (a stack) and NCHW (1D) passes, the input transpose
    and a batch norm reading NHWC (statistics, channels-last apply writing NCHW or, read by a
    conv, NHWC) compile for sm_90."""
    import triton

    if "nvidia" not in triton.backends.backends:
        pytest.skip("Triton's NVIDIA backend is not installed")
    pairs = []
    for case, src in [("conv2d", CASES["conv2d"][0]), ("stack", _STACK), ("conv1d", CASES["conv1d"][0]),
                      ("norm_pool_3d", _NORM_POOL), ("conv_bn", _CONV_BN), ("conv_bn_conv", _CONV_BN_CONV)]:
        cand = BuiltinAuthor().generate(AuthorTask(problem=problem(src), device="cpu", precision="default"))
        (tmp_path / f"{case}_problem.py").write_text(src)
        (tmp_path / f"{case}_cand.py").write_text(cand.source)
        pairs.append((str(tmp_path / f"{case}_problem.py"), str(tmp_path / f"{case}_cand.py")))
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", COMPILE_SCRIPT, json.dumps(pairs)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    shared = json.loads(done.stdout.strip().splitlines()[-1])
    assert sum("conv_layout_kernel" in k for k in shared) >= 4, shared
    assert any(k.startswith("_cv_transpose_kernel@") for k in shared), shared
    assert any("apply_cl_kernel" in k and k.endswith("/conv_bn_cand.py") for k in shared), shared
    assert any("apply_cl_kernel" in k and k.endswith("/conv_bn_conv_cand.py") for k in shared), shared


@pytest.mark.parametrize("name", ["transposed2d", "conv2d_residual_view", "stack"])
def test_int64_index_path(name: str, tmp_path: Path) -> None:
    """With `_i64` forced (every launcher of the file then indexes in int64), the pass's int64
    index path (tensors past 2**31 elements) matches the reference; transposed2d's per-row operand
    also takes the SPLIT path."""
    src = _STACK if name == "stack" else CASES[name][0]
    cand = BuiltinAuthor().generate(AuthorTask(problem=problem(src), device="cpu", precision="default"))
    module = load_candidate(cand.source, tmp_path / "cand.py")
    module._i64 = lambda *tensors, n=0: True
    prob = load_problem(src, "small", "<p>")
    torch.manual_seed(0)
    ref = prob.model_cls(*prob.get_init_inputs())
    torch.manual_seed(0)
    new = module.ModelNew(*prob.get_init_inputs())
    torch.manual_seed(1)
    inputs = prob.get_inputs()
    with torch.no_grad():
        torch.testing.assert_close(new(*inputs), ref(*inputs), atol=1e-4, rtol=1e-4)

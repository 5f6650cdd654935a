"""A convolution's bias absorbed by the batch, instance or group norm after it
(families/norms/absorb.py), and group / instance norms reading a convolution's channels-last
output in place: outputs and running statistics equal the reference's (two calls from one
state), the convolution is called without its bias and its tail pass is gone, and the PyTorch
fallbacks of both rewritten ops compute the same. Runs under the interpreter on CPU, where
channels-last tensors behave as on the GPU."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from author_util import evaluate, generate, problem, templates_used
from conv_pool_cases import HEAD, load_candidate, same_run
from kernelskill.authors.base import AuthorTask
from kernelskill.authors.builtin.author import BuiltinAuthor
from kernelskill.authors.builtin.templates.loader import load_templates

_MODEL = '''
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.c = {conv}
        self.n = {norm}
        if getattr(self.n, "weight", None) is not None:
            nn.init.normal_(self.n.weight, 1.0, 0.2)
            nn.init.normal_(self.n.bias, 0.0, 0.2)
        nn.init.normal_(self.c.bias, 0.5, 1.0)  # large next to the output: a dropped one shows
    def forward(self, x):
        y = self.c(x)
        return {ret}
def get_inputs():
    return [torch.randn({shape})]
def get_init_inputs():
    return []
'''

ABSORBED = {
    "conv2d-bn": ("nn.Conv2d(3, 6, 3, padding=1)", "nn.BatchNorm2d(6)", "2, 3, 9, 7"),
    "convT3d-bn": ("nn.ConvTranspose3d(3, 4, 2, stride=2)", "nn.BatchNorm3d(4)", "2, 3, 3, 4, 2"),
    "conv3d-bn-cumulative": ("nn.Conv3d(2, 5, 3, padding=1)", "nn.BatchNorm3d(5, momentum=None)",
                             "2, 2, 3, 4, 5"),
    "conv2d-bn-untracked": ("nn.Conv2d(3, 6, 3)", "nn.BatchNorm2d(6, track_running_stats=False)",
                            "3, 3, 8, 9"),
    "convT2d-in": ("nn.ConvTranspose2d(3, 5, 4, stride=2, padding=1)", "nn.InstanceNorm2d(5, affine=True)",
                   "2, 3, 6, 5"),
    "conv3d-in": ("nn.Conv3d(2, 4, 3, padding=1)", "nn.InstanceNorm3d(4)", "2, 2, 4, 3, 5"),
    "conv2d-gn": ("nn.Conv2d(3, 8, 3, padding=1)", "nn.GroupNorm(2, 8)", "2, 3, 7, 6"),
    "conv3d-gn-odd-groups": ("nn.Conv3d(2, 9, 3, padding=1)", "nn.GroupNorm(3, 9, affine=False)",
                             "3, 2, 3, 4, 3"),
}


def _src(conv: str, norm: str, shape: str, ret: str = "torch.relu(self.n(y))") -> str:
    return HEAD + _MODEL.format(conv=conv, norm=norm, shape=shape, ret=ret)


def _generate(src: str, precision: str = "default", author: BuiltinAuthor | None = None) -> str:
    task = AuthorTask(problem=problem(src), device="cpu", precision=precision)
    return (author or BuiltinAuthor()).generate(task).source


def _conv_bias_arg(source: str) -> str:
    """The bias argument of the forward's one convolution launcher call (x, weight, bias, ...)."""
    call = re.search(r"= (_vendor_conv\w*)\((.*)\)\n", source)
    assert call is not None, source
    return call.group(2).split(", ")[2]


@pytest.mark.parametrize("case", list(ABSORBED))
def test_the_norm_absorbs_the_conv_bias_and_reads_channels_last(case: str, tmp_path: Path) -> None:
    src = _src(*ABSORBED[case])
    source = _generate(src)
    assert _conv_bias_arg(source) == "None", source
    result = evaluate(src, source, trials=2, precision="default")
    assert result.correct, f"{result.reason}\n{source}"
    # No pass adds the bias or converts the convolution's output: the norm reads it in place.
    assert not any(k.startswith("_conv_layout_kernel") for k in result.kernel_names), result.kernel_names
    assert any(k.startswith("_nrm_apply_cl_kernel") for k in result.kernel_names), result.kernel_names
    assert same_run(src, source, tmp_path / "cand.py") == {4}  # running statistics included


@pytest.mark.parametrize("ret", ["torch.relu(self.n(y)) + y", "(self.n(y), y)"])
def test_the_bias_stays_where_another_op_reads_the_conv_output(ret: str, tmp_path: Path) -> None:
    src = _src("nn.Conv2d(3, 6, 3, padding=1)", "nn.BatchNorm2d(6)", "2, 3, 5, 4", ret)
    source = _generate(src)
    assert _conv_bias_arg(source) == "self.c.bias", source
    same_run(src, source, tmp_path / "cand.py")


def _failing(monkeypatch: pytest.MonkeyPatch, *ids: str) -> BuiltinAuthor:
    """An author whose templates `ids` fail to emit: their regions fall back to PyTorch."""
    templates = load_templates()
    for tid in ids:
        def broken(*args: object, _tid: str = tid) -> None:
            raise RuntimeError(f"{_tid} broken for the test")
        monkeypatch.setattr(templates[tid], "emit", broken)
    return BuiltinAuthor(templates)


@pytest.mark.parametrize("ids", [("two-level-norm-statistics",), ("channels-last-layout",),
                                 ("two-level-norm-statistics", "channels-last-layout")],
                         ids=["norm in PyTorch", "conv in PyTorch", "both in PyTorch"])
def test_the_fallbacks_of_the_rewritten_ops_compute_the_same(ids: tuple[str, ...], tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The batch norm's fallback adds the bias it absorbed back onto its input (so its running
    mean moves as the module's), the convolution's runs the functional call without bias."""
    src = _src(*ABSORBED["conv2d-bn"])
    source = _generate(src, author=_failing(monkeypatch, *ids))
    if "two-level-norm-statistics" in ids:
        assert "self.n(v_c + self.c.bias.reshape(-1, 1, 1))" in source, source
    if "channels-last-layout" in ids:
        assert "torch.nn.functional.conv2d(x, self.c.weight, None, self.c.stride" in source, source
    same_run(src, source, tmp_path / "cand.py")


# A group norm adding the bias makes a new x: its launcher plans each call (no cached plan).
@pytest.mark.parametrize("case,paths", [("convT3d-bn", {1}), ("conv2d-gn", set()),
                                        ("conv1d-gn", set())])
def test_nchw_convolutions_absorb_too(case: str, paths: set[int], tmp_path: Path) -> None:
    """Under `strict` (and for 1-D convolutions under any policy) the convolution stays NCHW
    (vendor-conv-fused-tail): without its bias and with no epilogue it needs no tail pass; a
    group norm then adds the bias to its NCHW input before its usual paths."""
    conv1d = ("nn.Conv1d(3, 8, 3, padding=1)", "nn.GroupNorm(4, 8)", "2, 3, 11")
    src = _src(*(conv1d if case == "conv1d-gn" else ABSORBED[case]))
    precision = "default" if case == "conv1d-gn" else "strict"
    source = _generate(src, precision=precision)
    assert _conv_bias_arg(source) == "None", source
    result = evaluate(src, source, trials=2, precision=precision)
    assert result.correct, f"{result.reason}\n{source}"
    assert same_run(src, source, tmp_path / "cand.py") == paths


def test_an_instance_norm_tracking_running_statistics_stays_the_modules(tmp_path: Path) -> None:
    """In training, InstanceNorm(track_running_stats=True) updates its buffers, which the
    generated norm would not: it stays the module's call, and the convolution keeps its bias."""
    src = _src("nn.Conv2d(3, 4, 3)", "nn.InstanceNorm2d(4, affine=True, track_running_stats=True)",
               "2, 3, 7, 6")
    source = _generate(src)
    assert "self.n(v_c)" in source and _conv_bias_arg(source) == "self.c.bias", source
    same_run(src, source, tmp_path / "cand.py")  # the running statistics included


@pytest.mark.parametrize("norm", ["nn.GroupNorm(2, 8)", "nn.InstanceNorm2d(8, affine=True)"])
def test_a_norm_read_only_by_a_conv_stays_channels_last(norm: str, tmp_path: Path) -> None:
    """conv -> group / instance norm -> silu -> conv (a ResNet or U-Net block): the norm writes
    the channels-last layout it read, which the next convolution takes as it is."""
    src = _src("nn.Conv2d(3, 8, 3, padding=1)", norm, "2, 3, 7, 6", "self.c2(F.silu(self.n(y)))")
    src = src.replace("        self.n = ", "        self.c2 = nn.Conv2d(8, 5, 1)\n        self.n = ")
    source = _generate(src)
    module = load_candidate(source, tmp_path / "cand.py")
    layouts: list[bool] = []
    for name, fn in list(vars(module).items()):
        if name.startswith(("_group_norm", "_instance_norm")) and callable(fn):
            def spy(*args: object, _fn=fn) -> torch.Tensor:  # noqa: ANN001
                out = _fn(*args)
                cl = out.is_contiguous(memory_format=torch.channels_last)
                layouts.append(cl and not out.is_contiguous())
                return out
            setattr(module, name, spy)
    with torch.no_grad():
        module.ModelNew()(torch.randn(2, 3, 7, 6))
    assert layouts == [True], (layouts, source)
    assert same_run(src, source, tmp_path / "again.py") == {4}


# Every convolution template, applied as a skill would be in a later round, to a convolution
# whose bias a norm absorbed: each reads the bias through common.conv_bias_expr.
SKILLS = {
    "conv-implicit-gemm": ("nn.Conv2d(3, 6, 3, padding=1)", "nn.BatchNorm2d(6)", "2, 3, 9, 7"),
    "pointwise-conv-as-gemm": ("nn.Conv2d(5, 6, 1)", "nn.BatchNorm2d(6)", "2, 5, 9, 7"),
    "conv3d-implicit-gemm": ("nn.Conv3d(2, 5, 3, padding=1)", "nn.BatchNorm3d(5, momentum=None)",
                             "2, 2, 3, 4, 5"),
    "conv-transpose-gather": ("nn.ConvTranspose2d(3, 5, 4, stride=2, padding=1)", "nn.GroupNorm(5, 5)",
                              "2, 3, 6, 5"),
    "vendor-conv-fused-tail": ("nn.Conv2d(3, 8, 3, padding=1)", "nn.GroupNorm(2, 8)", "2, 3, 7, 6"),
    "depthwise-conv-direct": ("nn.Conv2d(1, 6, 3, padding=1)", "nn.BatchNorm2d(6)", "2, 1, 9, 7"),
}


@pytest.mark.parametrize("skill", list(SKILLS))
def test_every_conv_template_keeps_the_absorbed_bias_out(skill: str, tmp_path: Path) -> None:
    src = _src(*SKILLS[skill])
    cand = generate(src, skill=skill)
    assert skill in templates_used(cand), templates_used(cand)
    result = evaluate(src, cand.source)
    assert result.correct, f"{result.reason}\n{cand.source}"
    same_run(src, cand.source, tmp_path / "cand.py")

"""An input that several channels-last convolutions read (a ResNet block's input, read by its first
convolution and by its downsampling shortcut; the branches of an Inception-style block) is
converted to channels-last once, not once per convolution: each conversion is a full read and
write of the input (families/conv_pool/layout.py, SharedInputs). Runs under the interpreter on
CPU, where channels-last tensors and F.conv*d on them work as on the GPU.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from author_util import evaluate, problem
from conv_pool_cases import HEAD, load_candidate, spy_conversions
from kernelskill.authors.base import AuthorTask
from kernelskill.authors.builtin.author import BuiltinAuthor
from kernelskill.authors.builtin.families.conv_pool.layout import CHANNELS_LAST_DIMS
from kernelskill.eval.problem import load_problem


def _source(dims: int, extra_reader: str = "") -> str:
    conv = f"nn.Conv{dims}d"
    shape = "2, 3, 9, 7" if dims == 2 else "2, 3, 5, 6, 4"
    return HEAD + f'''
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = {conv}(3, 6, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm{dims}d(6)
        self.c2 = {conv}(6, 6, 3, padding=1)
        self.down = {conv}(3, 6, 1)
    def forward(self, x):
        y = self.c2(torch.relu(self.bn(self.c1(x))))
        return torch.relu(y + self.down(x)){extra_reader}
def get_inputs():
    return [torch.randn({shape})]
def get_init_inputs():
    return []
'''


def _conversions(src: str, source: str, tmp: Path) -> list[tuple[int, bool]]:
    """The candidate's conversions to channels-last in one forward (spy_conversions)."""
    module = load_candidate(source, tmp / "cand.py")
    calls = spy_conversions(module)
    prob = load_problem(src, "small", "<p>")
    with torch.no_grad():
        module.ModelNew(*prob.get_init_inputs())(*prob.get_inputs())
    return calls


@pytest.mark.parametrize("dims", [2, 3])
def test_an_input_two_convolutions_read_is_converted_once(dims: int, tmp_path: Path) -> None:
    if dims not in CHANNELS_LAST_DIMS:
        pytest.skip(f"the channels-last rule is off for {dims}-D convolutions (CHANNELS_LAST_DIMS)")
    src = _source(dims)
    cand = BuiltinAuthor().generate(AuthorTask(problem=problem(src), device="cpu", precision="default"))
    assert cand.source.count("_x_nhwc = _cv_relayout(x, ") == 1, cand.source
    result = evaluate(src, cand.source, trials=2, precision="default")
    assert result.correct, f"{result.reason}\n{cand.source}"
    # x converted once; c2's input (the norm's channels-last output) and the copy need nothing.
    assert sorted(_conversions(src, cand.source, tmp_path)) == [(dims + 2, False)] * 3 + [(dims + 2, True)]


def test_an_input_another_op_reads_too_is_left_to_each_convolution(tmp_path: Path) -> None:
    """x also read by a reduction: no shared copy (only convolutions may read it, so nothing can
    write it between them), each convolution converts it as before."""
    if 2 not in CHANNELS_LAST_DIMS:
        pytest.skip("the channels-last rule is off for 2-D convolutions (CHANNELS_LAST_DIMS)")
    src = _source(2, " + x.mean()")
    cand = BuiltinAuthor().generate(AuthorTask(problem=problem(src), device="cpu", precision="default"))
    assert "_nhwc = _cv_relayout(" not in cand.source
    assert evaluate(src, cand.source, trials=1, precision="default").correct
    assert sorted(_conversions(src, cand.source, tmp_path)) == [(4, False)] + [(4, True)] * 2


def test_strict_keeps_every_convolution_nchw() -> None:
    src = _source(2)
    cand = BuiltinAuthor().generate(AuthorTask(problem=problem(src), device="cpu", precision="strict"))
    assert "_cv_relayout" not in cand.source

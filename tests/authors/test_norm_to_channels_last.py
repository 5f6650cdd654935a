"""A batch norm of an NCHW input (a concatenation, as in each DenseNet layer) whose result only a
channels-last convolution reads writes that result channels-last itself: the channels-last apply
reads x in NCHW (IN_CL off) and the transposition rides on its pass, where the convolution used
to transpose the norm's NCHW output (runtime/norm_batch.py). Runs under the interpreter on CPU,
where channels-last tensors and F.conv*d on them work as on the GPU.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from author_util import evaluate, problem
from conv_pool_cases import COMPILE_SCRIPT, HEAD, load_candidate, same_run, spy_conversions
from kernelskill.authors.base import AuthorTask
from kernelskill.authors.builtin.author import BuiltinAuthor
from kernelskill.authors.builtin.families.conv_pool.layout import CHANNELS_LAST_DIMS
from kernelskill.eval.problem import load_problem


def _source(dims: int, mode: str) -> str:
    shape = "2, 3, 7, 6" if dims == 2 else "2, 3, 5, 4, 3"
    return HEAD + f'''
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm{dims}d(7){".eval()" if mode == "eval" else ""}
        self.conv = nn.Conv{dims}d(7, 5, 1, bias=False)
        self.bn.running_mean.normal_()
        self.bn.running_var.uniform_(0.5, 2.0)
    def forward(self, x, z):
        return self.conv(torch.relu(self.bn(torch.cat([x, z], dim=1))))
def get_inputs():
    return [torch.randn({shape}), torch.randn({shape.replace("3", "4", 1)})]
def get_init_inputs():
    return []
'''


@pytest.mark.parametrize(("dims", "mode"), [(2, "train"), (2, "eval"), (3, "train")])
def test_a_norm_of_an_nchw_input_read_by_a_convolution_writes_channels_last(
        dims: int, mode: str, tmp_path: Path) -> None:
    if dims not in CHANNELS_LAST_DIMS:
        pytest.skip(f"the channels-last rule is off for {dims}-D convolutions (CHANNELS_LAST_DIMS)")
    src = _source(dims, mode)
    cand = BuiltinAuthor().generate(AuthorTask(problem=problem(src), device="cpu", precision="default"))
    result = evaluate(src, cand.source, trials=2, precision="default")
    assert result.correct, f"{result.reason}\n{cand.source}"
    module = load_candidate(cand.source, tmp_path / "cand.py")
    converted = spy_conversions(module)
    prob = load_problem(src, "small", "<p>")
    with torch.no_grad():
        out = module.ModelNew(*prob.get_init_inputs())(*prob.get_inputs())
    assert converted == [(dims + 2, False)], converted  # the norm's result arrived channels-last
    assert out.is_contiguous()  # the convolution's output, returned, in the reference's layout
    # Two calls from one state agree with the reference, running statistics included; the norm
    # took the channels-last apply's path (4 in training, 5 in eval).
    assert same_run(src, cand.source, tmp_path / "again.py") == {4 if mode == "train" else 5}


def test_the_nchw_reading_apply_compiles_for_sm90(tmp_path: Path) -> None:
    import triton

    if "nvidia" not in triton.backends.backends:
        pytest.skip("Triton's NVIDIA backend is not installed")
    src = _source(2, "train")
    cand = BuiltinAuthor().generate(AuthorTask(problem=problem(src), device="cpu", precision="default"))
    (tmp_path / "p.py").write_text(src)
    (tmp_path / "c.py").write_text(cand.source)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", COMPILE_SCRIPT,
                           json.dumps([[str(tmp_path / "p.py"), str(tmp_path / "c.py")]])],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    compiled = json.loads(done.stdout.strip().splitlines()[-1])
    assert any(k.startswith("_nrm_apply_cl_kernel") for k in compiled), compiled

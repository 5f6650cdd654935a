"""Inputs larger than the sandbox's file-size limit (CPU): the judge hands them over through
shared memory, which that limit must not reach, while the candidate's own files stay limited.
The limit is lowered to 1 MiB for the test (a 2 GiB input failed every evaluation with EFBIG)."""

from __future__ import annotations

import resource

import pytest
import torch
from kernelskill.eval.api import _run_worker
from kernelskill.eval.judge.remote import fits_shared_memory
from kernelskill.eval.problem import ProblemError
from kernelskill.eval.sandbox import layers as S
from kernelskill.eval.types import EvalOptions, EvalResult
from sandbox_util import child

LIMIT = 1 << 20
PROBLEM = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(3 << 18)]  # 3 MiB of fp32: three times the lowered limit


def get_init_inputs():
    return []
"""
CANDIDATE = PROBLEM.replace("class Model(", "class ModelNew(").split("def get_inputs")[0]


def test_an_input_above_the_file_size_limit_is_judged(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(S, "FSIZE_BYTES", LIMIT)
    opts = EvalOptions(device="cpu", size="small", trials=1, timeout_s=120, baselines=False)
    r = _run_worker(PROBLEM, CANDIDATE, opts, "big.py", "cand.py", EvalResult(device="cpu"))
    assert r.correct and r.stage == "done", (r.stage, r.reason, r.log_tail[-600:])


@pytest.mark.usefixtures("sandbox_child_on_path")
def test_the_judge_has_no_file_size_limit_and_gives_its_candidate_the_parents(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(S, "FSIZE_BYTES", LIMIT)
    run = child("import resource\nfrom kernelskill.eval.sandbox import layers as S\n"
                "print('CANDIDATE', S.rlimits('cpu', 10, S.ROLES['candidate']).get('RLIMIT_FSIZE'))\n"
                "print('OWN', resource.getrlimit(resource.RLIMIT_FSIZE)[0])", role="judge")
    ours = resource.getrlimit(resource.RLIMIT_FSIZE)[0]  # the judge keeps what it was started with
    assert f"CANDIDATE ({LIMIT}, {LIMIT})" in run.log_tail and f"OWN {ours}\n" in run.log_tail, run.log_tail


def test_tensors_beyond_the_free_shared_memory_are_one_usage_line() -> None:
    huge = torch.empty(1 << 50, dtype=torch.uint8, device="meta")  # 1 PiB: no /dev/shm holds it
    with pytest.raises(ProblemError) as e:
        fits_shared_memory([huge])
    msg = str(e.value)
    assert "\n" not in msg and "1048576.00 GiB" in msg and "GiB free in /dev/shm" in msg
    fits_shared_memory([torch.empty(16)])  # small ones pass

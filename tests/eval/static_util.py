"""Shared by the static-check tests: a candidate around a Triton ReLU, and the two verdicts
(every `# BAD` line flagged by its check; nothing flagged)."""

from __future__ import annotations

import textwrap

from kernelskill.eval.static.checks import StaticFailure, run_static_checks

HEADER = """\
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.where(x > 0, x, 0.0), mask=mask)


def relu(x):
    out = torch.empty_like(x)
    n = x.numel()
    relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
    return out
"""


def candidate(body: str) -> str:
    """A KernelBench-style candidate: the Triton ReLU above plus `body` (imports, ModelNew ...)."""
    return HEADER + textwrap.dedent(body)


def assert_flagged(source: str, check: str, **policy: object) -> list[StaticFailure]:
    """Every line marked `# BAD` fails `check`, with a message that points at it (under the strict
    precision policy unless `policy` says otherwise)."""
    failures = run_static_checks(source, **{"precision": "strict", **policy})
    bad = [i for i, text in enumerate(source.splitlines(), 1) if "# BAD" in text]
    assert bad, "test bug: no line marked # BAD"
    hits = {f.line: f for f in failures if f.check == check}
    for line in bad:
        assert line in hits, f"line {line} not flagged by {check}: {failures}"
        assert hits[line].message.startswith(f"line {line}: ")
        assert hits[line].message.endswith(f"({check.replace('_', ' ')})")
    return failures


def assert_clean(source: str, **policy: bool) -> None:
    assert run_static_checks(source, **policy) == []

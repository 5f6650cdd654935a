"""Convolutions under the `default` policy, broadly: random convolutions and transposed
convolutions (any stride, padding, dilation, groups, rank and tail), and the built-in author's first
candidate on every convolution problem of the suite. Runs under the interpreter on CPU."""

from __future__ import annotations

import pytest
from author_util import evaluate, problem, templates_used
from conv_pool_cases import PROBLEMS, SLOW, conv_case, conv_source, generate
from hypothesis import given
from kernelskill.authors.base import AuthorTask
from kernelskill.authors.builtin.author import BuiltinAuthor


@SLOW
@given(case=conv_case())
def test_default_policy_conv_variants(case: dict) -> None:
    """Any stride, padding, dilation, groups, rank and tail: correct under `default`."""
    src = conv_source(**case)
    cand = generate(src, precision="default")
    result = evaluate(src, cand.source, trials=1, precision="default")
    assert result.correct, f"{result.reason}\n{cand.source}"


@SLOW
@given(case=conv_case(transposed=True))
def test_default_policy_transposed_variants(case: dict) -> None:
    src = conv_source(**case)
    cand = generate(src, precision="default")
    result = evaluate(src, cand.source, trials=1, precision="default")
    assert result.correct, f"{result.reason}\n{cand.source}"


# ---- the suite's convolution problems -------------------------------------------------------

# level3/04 (small CNN) and 05 (MobileNet block) keep full channel counts at their small size and
# took 480 s and 100 s under the interpreter (both correct when run once by hand, 2026-12-01): left
# out, so the test stays a few minutes.
SUITE = [f"level1/{n}" for n in sorted(p.name for p in (PROBLEMS / "level1").glob("*.py"))
         if 43 <= int(n[:2]) <= 51] + \
        [f"level2/{p.name}" for p in sorted((PROBLEMS / "level2").glob("*conv*.py"))] + \
        [f"level3/{p.name}" for p in sorted((PROBLEMS / "level3").glob("*.py"))
         if p.name[:2] in ("02", "03", "09", "10", "11", "12")]


@pytest.mark.parametrize("name", SUITE)
def test_suite_conv_problem_default_candidate(name: str) -> None:
    """The full built-in author's first candidate under `default` is correct on every convolution
    problem of the suite; those whose every convolution is depthwise skip the vendor path."""
    src = (PROBLEMS / name).read_text()
    cand = BuiltinAuthor().generate(AuthorTask(problem=problem(src), device="cpu", precision="default"))
    used = templates_used(cand)
    assert {"channels-last-layout", "depthwise-conv-direct"} & set(used), used
    assert "vendor-conv-fused-tail" not in used, used
    result = evaluate(src, cand.source, trials=1, precision="default")
    assert result.correct, result.reason
    assert result.custom_kernels >= 1

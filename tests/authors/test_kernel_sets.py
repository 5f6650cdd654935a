"""Behaviour guard: each suite problem's first candidate launches the recorded kernels.

The recording (data/kernel_sets.json, written by record_kernel_sets.py) lists, per problem, the
`@triton.jit` kernel names and template ids of the built-in author's first candidate at size
"small" on CPU. A refactor of authors/builtin must leave them unchanged; a change meant to alter
them refreshes the recording with `python -m tests.authors.record_kernel_sets`.

The same candidate must pass every static check: the allowlist keeps what the author emits (a rule
that rejects it is fixed in the checker, unless the code truly is dangerous). One generation per
problem serves both checks; nothing is evaluated. All 88 problems take a few minutes on a 2-core
machine, hence `slow`.
"""

from __future__ import annotations

import json

import pytest
from kernelskill.authors.builtin.author import BuiltinAuthor
from kernelskill.eval.static.checks import problem_is_fp32, run_static_checks
from record_kernel_sets import RECORDING, ROOT, first_candidate, suite_problems, summary

RECORDED: dict[str, dict[str, list[str]]] = json.loads(RECORDING.read_text())


@pytest.fixture(scope="module")
def author() -> BuiltinAuthor:
    return BuiltinAuthor()


def test_recording_covers_the_suite() -> None:
    assert sorted(RECORDED) == [str(p.relative_to(ROOT)) for p in suite_problems()], (
        "the suite changed: refresh with `python -m tests.authors.record_kernel_sets`")


@pytest.mark.slow
@pytest.mark.parametrize("rel", sorted(RECORDED))
def test_first_candidate_keeps_its_kernels_and_passes_the_static_checks(rel: str,
                                                                        author: BuiltinAuthor) -> None:
    cand = first_candidate(ROOT / rel, author)
    assert summary(cand) == RECORDED[rel]
    failures = run_static_checks(cand.source, fp32_problem=problem_is_fp32((ROOT / rel).read_text()))
    assert failures == [], "\n".join(f.message for f in failures)

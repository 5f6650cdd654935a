"""Behaviour guard: each suite problem's first candidate launches the recorded kernels.

The recording (data/kernel_sets.json, written by record_kernel_sets.py) lists, per problem, the
`@triton.jit` kernel names and template ids of the built-in author's first candidate at size
"small" on CPU. A refactor of authors/builtin must leave them unchanged; a change meant to alter
them refreshes the recording with `python -m tests.authors.record_kernel_sets`. Generation only,
nothing is evaluated; all 88 problems take about a minute on a 2-core machine, hence `slow`.
"""

from __future__ import annotations

import json

import pytest
from kernelskill.authors.builtin.author import BuiltinAuthor
from record_kernel_sets import RECORDING, ROOT, kernel_set, suite_problems

RECORDED: dict[str, dict[str, list[str]]] = json.loads(RECORDING.read_text())


@pytest.fixture(scope="module")
def author() -> BuiltinAuthor:
    return BuiltinAuthor()


def test_recording_covers_the_suite() -> None:
    assert sorted(RECORDED) == [str(p.relative_to(ROOT)) for p in suite_problems()], (
        "the suite changed: refresh with `python -m tests.authors.record_kernel_sets`")


@pytest.mark.slow
@pytest.mark.parametrize("rel", sorted(RECORDED))
def test_kernel_set_unchanged(rel: str, author: BuiltinAuthor) -> None:
    assert kernel_set(ROOT / rel, author) == RECORDED[rel]

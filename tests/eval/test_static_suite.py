"""The allowlist keeps legitimate candidates: the built-in author's first candidate for every problem of
the suite (small sizes) passes every static check. Static checks only, so nothing runs; a rule that
rejects what the author emits is fixed in the checker, unless the code truly is dangerous."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from kernelskill.eval.static_checks import problem_is_fp32, run_static_checks

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "authors"))
from author_util import generate  # noqa: E402

PROBLEMS = sorted((Path(__file__).resolve().parents[2] / "problems").glob("level*/*.py"))


@pytest.mark.parametrize("path", PROBLEMS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_builtin_first_candidate_passes_the_static_checks(path: Path) -> None:
    source = path.read_text()
    candidate = generate(source, size="small").source
    failures = run_static_checks(candidate, fp32_problem=problem_is_fp32(source))
    assert failures == [], "\n".join(f.message for f in failures)

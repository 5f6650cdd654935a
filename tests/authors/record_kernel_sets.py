"""The kernel sets of the built-in author's first candidates, per suite problem.

For every problems/level*/*.py, the names of the `@triton.jit` kernels and the template ids the
first candidate (size "small", device "cpu", default precision) uses. test_kernel_sets.py
compares them against tests/authors/data/kernel_sets.json, so a refactor that changes which
kernels a suite problem launches shows up as a test failure instead of going unnoticed.

Refresh the recording deliberately, after a change meant to alter kernels:
    python -m tests.authors.record_kernel_sets
"""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path

os.environ.setdefault("TRITON_INTERPRET", "1")

from kernelskill.authors.base import AuthorTask  # noqa: E402
from kernelskill.authors.builtin.author import BuiltinAuthor  # noqa: E402
from kernelskill.state.records import Candidate, Problem  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
RECORDING = Path(__file__).parent / "data" / "kernel_sets.json"


def suite_problems() -> list[Path]:
    return sorted(ROOT.glob("problems/level*/*.py"))


def jit_kernels(source: str) -> list[str]:
    """Names of the functions decorated with `triton.jit` (bare or called) in `source`."""
    names = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef):
            for dec in node.decorator_list:
                target = dec.func if isinstance(dec, ast.Call) else dec
                if ast.unparse(target) == "triton.jit":
                    names.append(node.name)
    return sorted(names)


def first_candidate(path: Path, author: BuiltinAuthor) -> Candidate:
    """The built-in author's first candidate for the problem at `path` (size small, CPU)."""
    problem = Problem(name=path.stem, path=str(path), source=path.read_text(), size="small")
    return author.generate(AuthorTask(problem=problem, device="cpu"))


def summary(cand: Candidate) -> dict[str, list[str]]:
    return {"kernels": jit_kernels(cand.source), "templates": sorted(cand.author_state.templates)}


def kernel_set(path: Path, author: BuiltinAuthor) -> dict[str, list[str]]:
    return summary(first_candidate(path, author))


def kernel_sets() -> dict[str, dict[str, list[str]]]:
    author = BuiltinAuthor()
    return {str(p.relative_to(ROOT)): kernel_set(p, author) for p in suite_problems()}


def main() -> None:
    RECORDING.parent.mkdir(parents=True, exist_ok=True)
    RECORDING.write_text(json.dumps(kernel_sets(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {RECORDING.relative_to(ROOT)}")


if __name__ == "__main__":
    main()

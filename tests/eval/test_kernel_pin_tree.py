"""kernel_pin's one pass over a kernel's tree (eval/candidate/kernel_pin.py): the hash ignores
positions and decorators but nothing Triton reads, the copy shares no node with the tree the
candidate handed over, and a tree holding what ast.parse never makes is refused."""

from __future__ import annotations

import ast

import pytest
from kernelskill.eval.candidate import audit
from kernelskill.eval.candidate import kernel_pin as K

KERNEL = """
@triton.jit
def add(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1.0, mask=offs < n)
"""


def _fn(text: str = KERNEL) -> ast.FunctionDef:
    return ast.parse(text).body[0]


def test_the_hash_ignores_positions_and_decorators_only() -> None:
    moved = "\n\n\n" + KERNEL.replace("@triton.jit", "@triton.autotune(configs=[], key=[])\n@triton.jit")
    assert K.tree_hash(_fn()) == K.tree_hash(_fn(moved))
    assert K.tree_hash(_fn()) != K.tree_hash(_fn(KERNEL.replace("+ 1.0", "+ 1")))  # int, not float
    assert K.tree_hash(_fn()) != K.tree_hash(_fn(KERNEL.replace("+ 1.0", "- 1.0")))
    assert K.pins("import triton\nimport triton.language as tl\n" + KERNEL) == [K.tree_hash(_fn())]


def test_the_verified_copy_is_its_own_tree() -> None:
    fn = _fn()
    K._PINS.candidate.add(K.tree_hash(fn))
    copied = K._verified_copy(fn, "the tree of")
    assert ast.dump(copied, include_attributes=True) == ast.dump(fn, include_attributes=True)
    originals = {id(n) for n in ast.walk(fn)}
    assert not originals & {id(n) for n in ast.walk(copied)}
    fn.body[0].value.left.left.func.attr = "changed"  # the candidate edits what it handed over
    assert copied.body[0].value.left.left.func.attr == "program_id"


class _Lying(str):
    def __repr__(self) -> str:
        return "'program_id'"


def test_a_tree_ast_parse_never_makes_is_refused() -> None:
    fn = _fn()
    K._PINS.candidate.add(K.tree_hash(fn))
    fn.body[0].value.left.left.func.attr = _Lying("num_programs")  # reads as the pinned tree
    with pytest.raises(audit.Violation):
        K._verified_copy(fn, "the tree of")
    with pytest.raises(audit.Violation):
        K._verified_copy(ast.Module(body=[], type_ignores=[]), "the tree of")


def test_the_static_checks_parse_gives_the_same_pins_after_the_checks_ran() -> None:
    """The evaluator parses a candidate once, for the checks and the pins (eval/api.py): the
    checks leave that parse as they found it."""
    import sys
    from pathlib import Path

    from kernelskill.eval.static.checks import check_parsed, run_static_checks
    from kernelskill.eval.static.source import _Source

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
    from candidates import good

    src = good() + "\n" + KERNEL
    parsed = _Source(src)
    failures = check_parsed(parsed)
    assert K.pins(parsed) == K.pins(src) and len(K.pins(src)) == 2
    assert failures == run_static_checks(src)

"""Pruning a candidate to what it runs: the Triton kernels it launched at the verified shapes, and
the host code that can still reach them.

Why run-time evidence and not static reachability alone: launchers choose among kernel variants
by shape at run time (GEMV, split-K, operand preparation...), so every variant is statically
reachable; the evaluator records which kernels actually launched (EvalResult.kernel_names).

The pass, on the AST, with text edits so comments survive:
1. A host statement that launches a kernel that never ran (`_launch(K, ...)`, `K[grid](...)`,
   a call to a function that always does) is replaced by one `raise RuntimeError(...)` naming
   the verified shapes; a block, `if` branch or function that then always raises becomes that
   one line, and a function that always raises makes its callers' statements raise, to a fixed
   point. Other shapes fail loudly instead of taking a silent wrong path.
2. Top-level definitions no longer reachable from ModelNew (kernels, device functions, helpers,
   constants, imports) are removed with the comment block above them.
The result is checked to parse; the caller re-verifies it with the evaluator.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass, field

from .host import LAUNCH_NAME, Edit, jit_kernels, raising_edits
from .reach import defined, remove, unreachable

__all__ = ["PruneError", "Pruned", "jit_kernels", "prune"]


class PruneError(Exception):
    """The candidate could not be pruned (its source does not parse, or the result would not)."""


@dataclass
class Pruned:
    source: str
    kernels: list[str]
    """The Triton kernels kept that the verified run launched."""
    removed: list[str] = field(default_factory=list)
    """Top-level names removed (kernels, helpers, constants, imports)."""
    raises: int = 0
    """Host branches replaced by a RuntimeError."""


def _apply(source: str, edits: list[Edit]) -> str:
    """`source` with the edits applied (positions are the AST's: 1-based lines, UTF-8 columns)."""
    data = source.encode()
    starts = [0]
    for line in data.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    spans = sorted(((starts[e.start[0] - 1] + e.start[1], starts[e.end[0] - 1] + e.end[1], e.text)
                    for e in edits), reverse=True)
    for (a, _, _), (_, b2, _) in zip(spans[:-1], spans[1:], strict=True):
        if b2 > a:
            raise PruneError("overlapping edits")
    for a, b, text in spans:
        data = data[:a] + text.encode() + data[b:]
    return data.decode()


def _insert_message(source: str, tree: ast.Module, where: str) -> str:
    """The raises' shared message, right after the leading imports."""
    last = 0
    for i, s in enumerate(tree.body):
        if isinstance(s, (ast.Import, ast.ImportFrom)) or i == 0 and isinstance(s, ast.Expr) \
                and isinstance(s.value, ast.Constant):
            last = s.end_lineno
        else:
            break
    msg = [f"kernelskill verified this solution for {where} ", "and removed the code paths those shapes "
           "do not take; ", "re-run kernelskill for other shapes. This path launches: "]
    lines = source.splitlines(keepends=True)
    const = (f"\n# Raised where a removed path would run (kernelskill's pruning).\n{LAUNCH_NAME} = (\n"
             + "".join(f"    {m!r}\n" for m in msg) + ")\n")
    return "".join(lines[:last]) + const + "".join(lines[last:])


def prune(source: str, launched: Iterable[str], where: str, root: str = "ModelNew") -> Pruned:
    """`source` reduced to what runs when it launches exactly the Triton kernels `launched`
    (which ran when it was verified for `where`, e.g. "p at small sizes (N=37) on cpu")."""
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        raise PruneError(f"the candidate does not parse: {e}") from e
    if not any(isinstance(s, ast.ClassDef) and s.name == root for s in tree.body):
        raise PruneError(f"the candidate defines no top-level {root}")
    edits, kept = raising_edits(source, tree, set(launched))
    text = _apply(source, edits)
    if edits:
        text = _insert_message(text, ast.parse(text), where)
    try:
        tree = ast.parse(text)
        dead = unreachable(tree, root)
        before = {n for s in tree.body for n in defined(s)[0]}
        text = remove(text, dead, tree)
        after = ast.parse(text)
        compile(after, "<pruned>", "exec")
    except SyntaxError as e:
        raise PruneError(f"the pruned source does not parse: {e}") from e
    removed = sorted(before - {n for s in after.body for n in defined(s)[0]})
    raises = text.count(f"RuntimeError({LAUNCH_NAME}")
    return Pruned(text, sorted(kept & jit_kernels(after)), removed, raises)

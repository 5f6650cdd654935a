"""Top-level definitions no longer reachable from ModelNew, and their removal with the comment
block above them (the second half of pruning; see __init__)."""

from __future__ import annotations

import ast
import re


def defined(stmt: ast.stmt) -> tuple[set[str], str | None]:
    """(names a top-level statement defines, the name it is attached to: `f.attr = ...` belongs to f)."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}, None
    if isinstance(stmt, ast.Import):
        return {(a.asname or a.name).split(".")[0] for a in stmt.names}, None
    if isinstance(stmt, ast.ImportFrom) and stmt.module != "__future__":
        return {a.asname or a.name for a in stmt.names if a.name != "*"}, None
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] \
        if isinstance(stmt, (ast.AnnAssign, ast.AugAssign)) else []
    names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    if targets and all(isinstance(n, (ast.Name, ast.Tuple, ast.List, ast.Store))
                       for t in targets for n in ast.walk(t)):
        return (set(), names.pop()) if isinstance(stmt, ast.AugAssign) else (names, None)
    if len(targets) == 1 and isinstance(targets[0], (ast.Attribute, ast.Subscript)):
        base = targets[0]
        while isinstance(base, (ast.Attribute, ast.Subscript)):
            base = base.value
        if isinstance(base, ast.Name):
            return set(), base.id
    return set(), None


def _uses(node: ast.AST) -> set[str]:
    out = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Store)}
    return out | {x for n in ast.walk(node) if isinstance(n, (ast.Global, ast.Nonlocal)) for x in n.names}


def unreachable(tree: ast.Module, root: str) -> list[ast.stmt]:
    """Top-level statements nothing reachable from `root` (and from statements that define
    nothing, which run at import) refers to."""
    info = [defined(s) for s in tree.body]
    for i, s in enumerate(tree.body):  # an attribute docstring belongs to the assignment above it
        if i and isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and info[i - 1][0]:
            info[i] = (set(), next(iter(info[i - 1][0])))
    used: set[str] = {root}
    keep = [not names and attached is None for names, attached in info]
    seen: set[int] = set()
    while True:
        for i, (names, attached) in enumerate(info):
            keep[i] = keep[i] or bool(names & used) or attached in used
        todo = [i for i, k in enumerate(keep) if k and i not in seen]
        if not todo:
            return [s for s, k in zip(tree.body, keep, strict=True) if not k]
        for i in todo:
            seen.add(i)
            used |= _uses(tree.body[i])


def remove(source: str, stmts: list[ast.stmt], tree: ast.Module) -> str:
    lines = source.splitlines(keepends=True)
    gone: set[int] = set()
    kept_lines = {i for s in tree.body if s not in stmts for i in range(s.lineno, s.end_lineno + 1)}
    for s in stmts:
        first = min([s.lineno, *(d.lineno for d in getattr(s, "decorator_list", []))])
        span = set(range(first, s.end_lineno + 1))
        if span & kept_lines:  # shares a line with a kept statement
            continue
        while first > 1 and lines[first - 2].startswith("#"):  # its comment block
            first -= 1
            span.add(first)
        gone |= span
    text = "".join(line for i, line in enumerate(lines, 1) if i not in gone)
    return re.sub(r"\n{4,}", "\n\n\n", text)



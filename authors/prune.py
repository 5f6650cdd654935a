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
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_LAUNCH_NAME = "_PRUNED"


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


@dataclass
class _Edit:
    start: tuple[int, int]
    end: tuple[int, int]
    text: str


@dataclass
class _Res:
    raises: bool = False
    why: frozenset[str] = frozenset()
    edits: list[_Edit] = field(default_factory=list)


def jit_kernels(tree: ast.Module) -> set[str]:
    """Top-level functions decorated with triton.jit (under autotune / heuristics too)."""
    def is_jit(d: ast.expr) -> bool:
        d = d.func if isinstance(d, ast.Call) else d
        return isinstance(d, ast.Attribute) and d.attr == "jit" or isinstance(d, ast.Name) and d.id == "jit"
    return {n.name for n in tree.body
            if isinstance(n, ast.FunctionDef) and any(map(is_jit, n.decorator_list))}


def _span(node: ast.AST) -> tuple[tuple[int, int], tuple[int, int]]:
    return (node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset)


def _escapes(stmt: ast.stmt) -> bool:
    """Can control leave the enclosing block from inside `stmt` (return, break, continue, yield)?"""
    todo: list[ast.AST] = [stmt]
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.Return, ast.Break, ast.Continue, ast.Yield, ast.YieldFrom)):
            return True
        todo.extend(c for c in ast.iter_child_nodes(n) if not isinstance(c, _SCOPES))
    return False


class _Host:
    """Which host statements must launch a pruned kernel, and the edits that make them raise."""

    def __init__(self, lines: list[str], pruned: set[str], kept: set[str],
                 raising: dict[str, frozenset[str]]):
        self.lines, self.pruned, self.kept, self.raising = lines, pruned, kept, raising

    def raise_text(self, why: Iterable[str]) -> str:
        return f"raise RuntimeError({_LAUNCH_NAME} + {', '.join(sorted(why))!r})"

    def _indent(self, node: ast.AST) -> str:
        line = self.lines[node.lineno - 1]
        return line[: len(line) - len(line.lstrip())]

    # ---- expressions ---------------------------------------------------------------------
    def _names(self, e: ast.expr) -> set[str]:
        """Kernel names an argument passes: a name, or either branch of `a if c else b`."""
        if isinstance(e, ast.Name):
            return {e.id}
        if isinstance(e, ast.IfExp):
            return self._names(e.body) | self._names(e.orelse)
        return set()

    def _call_targets(self, call: ast.Call) -> set[str]:
        f = call.func
        while isinstance(f, (ast.Subscript, ast.Attribute)):  # K[grid](...), K.fn[grid](...), K.run(...)
            f = f.value
        names = {f.id} if isinstance(f, ast.Name) else set()
        for a in [*call.args, *(k.value for k in call.keywords)]:
            names |= self._names(a.value if isinstance(a, ast.Starred) else a)
        return names

    def launches(self, node: ast.AST) -> frozenset[str]:
        """Pruned kernels (or raising functions' kernels) that evaluating `node` always launches.
        A call that also passes a kept kernel is left alone: it may launch that one."""
        why: set[str] = set()
        todo = [node]
        while todo:
            n = todo.pop()
            if isinstance(n, _SCOPES):
                continue
            if isinstance(n, ast.IfExp):
                todo.append(n.test)
                continue
            if isinstance(n, ast.BoolOp):
                todo.append(n.values[0])
                continue
            if isinstance(n, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                todo.append(n.generators[0].iter)
                continue
            if isinstance(n, ast.Call):
                names = self._call_targets(n)
                f = n.func.id if isinstance(n.func, ast.Name) else None
                if f in self.raising:
                    why |= self.raising[f]
                elif names & self.pruned and not names & self.kept:
                    ifexp = [a for a in n.args if isinstance(a, ast.IfExp) and self._names(a) & self.pruned]
                    if not ifexp or all(self._names(a) <= self.pruned for a in ifexp):
                        why |= names & self.pruned
            todo.extend(ast.iter_child_nodes(n))
        return frozenset(why)

    def _choice(self, stmt: ast.stmt) -> list[_Edit]:
        """`f(K1 if c else K2, ...)` with one pruned kernel: raise when `c` picks it, pass the other."""
        if not isinstance(stmt, (ast.Expr, ast.Assign, ast.Return)) or stmt.lineno != stmt.end_lineno:
            return []
        for n in ast.walk(stmt):
            if not (isinstance(n, ast.IfExp) and isinstance(n.body, ast.Name)
                    and isinstance(n.orelse, ast.Name)):
                continue
            gone, other = (n.body.id, n.orelse.id) if n.body.id in self.pruned else (n.orelse.id, n.body.id)
            if gone not in self.pruned or other not in self.kept \
                    or any(isinstance(c, ast.Call) for c in ast.walk(n.test)):
                continue
            test = ast.unparse(n.test)
            neg = f"not {test}" if isinstance(n.test, ast.Name) else f"not ({test})"
            cond = test if gone == n.body.id else neg
            ind = self._indent(stmt)
            guard = f"if {cond}:\n{ind}    {self.raise_text({gone})}\n{ind}"
            return [_Edit((stmt.lineno, stmt.col_offset), (stmt.lineno, stmt.col_offset), guard),
                    _Edit(*_span(n), other)]
        return []

    # ---- statements ----------------------------------------------------------------------
    def block(self, stmts: list[ast.stmt]) -> _Res:
        edits: list[_Edit] = []
        escaped = False
        for s in stmts:
            r = self.stmt(s)
            if r.raises:
                if not escaped:
                    return _Res(True, r.why)
                # An earlier statement may leave the block: keep it, raise from here on.
                edits.append(_Edit(_span(s)[0], _span(stmts[-1])[1], self.raise_text(r.why)))
                return _Res(False, r.why, edits)
            edits += r.edits
            escaped = escaped or _escapes(s)
        return _Res(False, frozenset(), edits)

    def _replace_block(self, stmts: list[ast.stmt], why: frozenset[str]) -> _Edit:
        return _Edit(_span(stmts[0])[0], _span(stmts[-1])[1], self.raise_text(why))

    def stmt(self, s: ast.stmt) -> _Res:
        if isinstance(s, ast.If):
            head = self.launches(s.test)
            if head:
                return _Res(True, head)
            body, orelse = self.block(s.body), self.block(s.orelse) if s.orelse else _Res()
            if body.raises and orelse.raises:
                return _Res(True, body.why | orelse.why)
            edits = [self._replace_block(s.body, body.why)] if body.raises else body.edits
            if orelse.raises:
                inner = s.orelse[0]
                if len(s.orelse) == 1 and isinstance(inner, ast.If) and \
                        self.lines[inner.lineno - 1][inner.col_offset:].startswith("elif"):
                    ind = self._indent(inner.body[0])
                    edits.append(_Edit(*_span(inner), f"else:\n{ind}{self.raise_text(orelse.why)}"))
                else:
                    edits.append(self._replace_block(s.orelse, orelse.why))
            else:
                edits += orelse.edits
            return _Res(False, frozenset(), edits)
        if isinstance(s, (ast.For, ast.While, ast.With, ast.Try, ast.FunctionDef)):
            # Bodies are edited; the statement never counts as always raising: a loop may run no
            # iteration, a context manager or handler may swallow the error.
            head = [e for e in (getattr(s, "iter", None), getattr(s, "test", None)) if e is not None]
            head += [i.context_expr for i in getattr(s, "items", [])]
            why = frozenset().union(*(self.launches(e) for e in head))
            if why and not isinstance(s, ast.FunctionDef):
                return _Res(True, why)
            edits: list[_Edit] = []
            blocks = [s.body, getattr(s, "orelse", []), getattr(s, "finalbody", [])]
            blocks += [h.body for h in getattr(s, "handlers", [])]
            for b in blocks:
                if b:
                    r = self.block(b)
                    edits += [self._replace_block(b, r.why)] if r.raises else r.edits
            return _Res(False, frozenset(), edits)
        if isinstance(s, (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Assert,
                          ast.Delete)):
            why = self.launches(s)
            return _Res(True, why) if why else _Res(False, frozenset(), self._choice(s))
        return _Res()

    def function(self, fn: ast.FunctionDef) -> _Res:
        """The function's body: raises always (with the docstring kept), or edited."""
        body = fn.body[1:] if ast.get_docstring(fn) is not None and len(fn.body) > 1 else fn.body
        r = self.block(body)
        return _Res(True, r.why, [self._replace_block(body, r.why)]) if r.raises else r


def _apply(source: str, edits: list[_Edit]) -> str:
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


def _host_functions(tree: ast.Module, kernels: set[str]) -> tuple[list[ast.FunctionDef], ...]:
    """(top-level host functions whose calls may propagate a raise: undecorated ones, every host
    function and method whose body is edited)."""
    top = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name not in kernels]
    methods = [m for c in tree.body if isinstance(c, ast.ClassDef)
               for m in c.body if isinstance(m, ast.FunctionDef)]
    return [f for f in top if not f.decorator_list], top + methods


def _raising_edits(source: str, tree: ast.Module, launched: set[str]) -> tuple[list[_Edit], set[str]]:
    kernels = jit_kernels(tree)
    pruned, kept = kernels - launched, kernels & launched
    plain, hosts = _host_functions(tree, kernels)
    lines = source.splitlines()
    raising: dict[str, frozenset[str]] = {}
    while True:  # a function that always raises makes its callers raise: to a fixed point
        host = _Host(lines, pruned, kept, raising)
        found = {f.name: r.why for f in plain if (r := host.function(f)).raises}
        if found == raising:
            break
        raising = found
    return [e for f in hosts for e in host.function(f).edits], kept


def _defined(stmt: ast.stmt) -> tuple[set[str], str | None]:
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


def _unreachable(tree: ast.Module, root: str) -> list[ast.stmt]:
    """Top-level statements nothing reachable from `root` (and from statements that define
    nothing, which run at import) refers to."""
    info = [_defined(s) for s in tree.body]
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


def _remove(source: str, stmts: list[ast.stmt], tree: ast.Module) -> str:
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
    const = (f"\n# Raised where a removed path would run (kernelskill's pruning).\n{_LAUNCH_NAME} = (\n"
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
    edits, kept = _raising_edits(source, tree, set(launched))
    text = _apply(source, edits)
    if edits:
        text = _insert_message(text, ast.parse(text), where)
    try:
        tree = ast.parse(text)
        dead = _unreachable(tree, root)
        before = {n for s in tree.body for n in _defined(s)[0]}
        text = _remove(text, dead, tree)
        after = ast.parse(text)
        compile(after, "<pruned>", "exec")
    except SyntaxError as e:
        raise PruneError(f"the pruned source does not parse: {e}") from e
    removed = sorted(before - {n for s in after.body for n in _defined(s)[0]})
    raises = text.count(f"RuntimeError({_LAUNCH_NAME}")
    return Pruned(text, sorted(kept & jit_kernels(after)), removed, raises)

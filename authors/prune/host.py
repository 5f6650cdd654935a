"""Which host statements of a candidate must launch a kernel that did not run, and the text edits
that make them raise instead (the first half of pruning; see __init__)."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass, field

LAUNCH_NAME = "_PRUNED"
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


@dataclass
class Edit:
    start: tuple[int, int]
    end: tuple[int, int]
    text: str


@dataclass
class _Res:
    raises: bool = False
    why: frozenset[str] = frozenset()
    edits: list[Edit] = field(default_factory=list)


def jit_kernels(tree: ast.Module) -> set[str]:
    """Top-level functions decorated with triton.jit (under autotune / heuristics too)."""
    def is_jit(d: ast.expr) -> bool:
        d = d.func if isinstance(d, ast.Call) else d
        return isinstance(d, ast.Attribute) and d.attr == "jit" or isinstance(d, ast.Name) and d.id == "jit"
    return {n.name for n in tree.body
            if isinstance(n, ast.FunctionDef) and any(map(is_jit, n.decorator_list))}


def span(node: ast.AST) -> tuple[tuple[int, int], tuple[int, int]]:
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


def _not_equal(s: ast.stmt) -> tuple[str, tuple[type, object]] | None:
    """(E, c) for `if E != c:` without else, E a name or attribute chain, c an int or str literal
    (the mode tests of launchers: `if p.prep != 2:`)."""
    if not (isinstance(s, ast.If) and not s.orelse and isinstance(s.test, ast.Compare)
            and len(s.test.ops) == 1 and isinstance(s.test.ops[0], ast.NotEq)):
        return None
    e, c = s.test.left, s.test.comparators[0]
    if not isinstance(e, (ast.Name, ast.Attribute)) or not isinstance(_root(e), ast.Name) \
            or not isinstance(c, ast.Constant) or type(c.value) not in (int, str):
        return None
    return ast.unparse(e), (type(c.value), c.value)


def _root(e: ast.expr) -> ast.expr:
    while isinstance(e, (ast.Attribute, ast.Subscript)):
        e = e.value
    return e


def _may_change(stmt: ast.stmt, name: str) -> bool:
    """Might `stmt` rebind or mutate what `name` refers to (assign it or into it, pass it to a
    call, call its methods)?"""
    def is_name(e: ast.expr) -> bool:
        return isinstance(e, ast.Name) and e.id == name
    for n in ast.walk(stmt):
        if isinstance(n, (ast.Name, ast.Attribute, ast.Subscript)) and not isinstance(n.ctx, ast.Load) \
                and is_name(_root(n)):
            return True
        if isinstance(n, ast.Call) and (not isinstance(n.func, ast.Name) and is_name(_root(n.func))
                                        or any(map(is_name, [*n.args, *(k.value for k in n.keywords)]))):
            return True
    return False


class _Host:
    """Which host statements must launch a pruned kernel, and the edits that make them raise."""

    def __init__(self, lines: list[str], pruned: set[str], kept: set[str],
                 raising: dict[str, frozenset[str]]):
        self.lines, self.pruned, self.kept, self.raising = lines, pruned, kept, raising

    def raise_text(self, why: Iterable[str]) -> str:
        return f"raise RuntimeError({LAUNCH_NAME} + {', '.join(sorted(why))!r})"

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

    def _choice(self, stmt: ast.stmt) -> list[Edit]:
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
            return [Edit((stmt.lineno, stmt.col_offset), (stmt.lineno, stmt.col_offset), guard),
                    Edit(*span(n), other)]
        return []

    def _slots(self, stmt: ast.stmt) -> list[Edit]:
        """`f(..., (K1, K2), ...)`, kernels handed to a runtime that picks one (a launch plan):
        each pruned one becomes None, on which the runtime's launch raises (runtime _launch)."""
        edits: list[Edit] = []
        for n in ast.walk(stmt):
            if not isinstance(n, ast.Call):
                continue
            for a in n.args:
                if not isinstance(a, (ast.Tuple, ast.List)) or \
                        not all(isinstance(e, ast.Name) and e.id in self.pruned | self.kept for e in a.elts):
                    continue
                names = {e.id for e in a.elts}
                if names & self.pruned and names & self.kept:
                    edits += [Edit(*span(e), "None") for e in a.elts if e.id in self.pruned]
        return edits

    # ---- statements ----------------------------------------------------------------------
    def block(self, stmts: list[ast.stmt]) -> _Res:
        edits: list[Edit] = []
        escaped = False
        pinned: dict[str, tuple[type, object]] = {}  # E -> c where a raising `if E != c` was passed
        for s in stmts:
            r = self.stmt(s)
            guard = _not_equal(s)
            if guard and not r.raises and self.block(s.body).raises:
                key, c = guard
                if pinned.get(key, c) != c:  # E == pinned here, so `E != c` holds: this raises too
                    r = _Res(True, self.block(s.body).why)
                else:
                    pinned[key] = c
            if r.raises:
                if not escaped:
                    return _Res(True, r.why)
                # An earlier statement may leave the block: keep it, raise from here on.
                edits.append(Edit(span(s)[0], span(stmts[-1])[1], self.raise_text(r.why)))
                return _Res(False, r.why, edits)
            edits += r.edits
            escaped = escaped or _escapes(s)
            pinned = {k: c for k, c in pinned.items() if not _may_change(s, k.split(".")[0])}
        return _Res(False, frozenset(), edits)

    def _replace_block(self, stmts: list[ast.stmt], why: frozenset[str]) -> Edit:
        return Edit(span(stmts[0])[0], span(stmts[-1])[1], self.raise_text(why))

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
                    edits.append(Edit(*span(inner), f"else:\n{ind}{self.raise_text(orelse.why)}"))
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
            edits: list[Edit] = []
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
            return _Res(True, why) if why else _Res(False, frozenset(), self._choice(s) + self._slots(s))
        return _Res()

    def function(self, fn: ast.FunctionDef) -> _Res:
        """The function's body: raises always (with the docstring kept), or edited."""
        body = fn.body[1:] if ast.get_docstring(fn) is not None and len(fn.body) > 1 else fn.body
        r = self.block(body)
        return _Res(True, r.why, [self._replace_block(body, r.why)]) if r.raises else r


def _host_functions(tree: ast.Module, kernels: set[str]) -> tuple[list[ast.FunctionDef], ...]:
    """(top-level host functions whose calls may propagate a raise: undecorated ones, every host
    function and method whose body is edited)."""
    top = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name not in kernels]
    methods = [m for c in tree.body if isinstance(c, ast.ClassDef)
               for m in c.body if isinstance(m, ast.FunctionDef)]
    return [f for f in top if not f.decorator_list], top + methods


def raising_edits(source: str, tree: ast.Module, launched: set[str]) -> tuple[list[Edit], set[str]]:
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



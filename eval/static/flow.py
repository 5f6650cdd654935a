"""Data flow for the static checks: what forward computes from its inputs, and where it is kept.

Feeds `output_caching` and `call_counting` in checks.py: a value computed in forward that
outlives the call (stored on self or in a module global, directly or through helpers forward
calls) is a cache; a kept counter or a growing kept list counts calls. Values assigned inside a
CUDA-graph capture, shape-keyed caches and copies of the inputs are allowed. Stdlib only.
"""

from __future__ import annotations

import ast
import functools

from .source import (
    _ALLOC,
    _COPIES,
    _GRAPH,
    _GROWERS,
    _META,
    _MUTATORS,
    _args,
    _is_name,
    _local_walk,
    _root,
    _Source,
)


@functools.lru_cache(maxsize=8)  # output_caching and call_counting both read one source's flow
def flow(src: _Source) -> tuple[list[tuple[ast.AST, str]], list[tuple[ast.AST, str]]]:
    """Scans every function and method but __init__ and Triton kernels; returns the findings of
    (output_caching, call_counting). Parameters of forward/__call__ hold inputs; argument levels flow
    into the module functions and self-methods they call, to a fixed point."""
    module = {f.name: f for f in src.tree.body if isinstance(f, ast.FunctionDef) and f not in src.jit}
    owner = {f: (None, {}) for f in module.values()}  # function -> (its self name, its class's methods)
    for cls in (c for c in src.nodes if isinstance(c, ast.ClassDef)):
        methods = {f.name: f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name != "__init__"}
        for f in methods.values():
            method = f.args.args and not any(_is_name(d, "staticmethod") for d in f.decorator_list)
            owner[f] = (f.args.args[0].arg if method else None, methods)
    params = {f: {a.arg: 1 for a in _args(f)} if f.name in ("forward", "__call__") else {} for f in owner}
    # Levels only rise, and a scan depends on its own function's parameters alone: each round
    # rescans just the functions whose parameters rose (a large candidate's 43 functions took seven
    # full rounds), until none does.
    scans = {f: _Scan(src, f, *owner[f], module, owner, params[f]) for f in owner}
    fresh = list(owner)
    while fresh:
        rose: set[ast.FunctionDef] = set()
        for f in fresh:
            for callee, bound in scans[f].calls:
                for name, lvl in bound.items():
                    if lvl > params[callee].get(name, 0):
                        params[callee][name] = lvl
                        rose.add(callee)
        fresh = [f for f in owner if f in rose]
        for f in fresh:
            scans[f] = _Scan(src, f, *owner[f], module, owner, params[f])
    return [x for f in owner for x in scans[f].caching], [x for f in owner for x in scans[f].counting]


class _Scan:
    """In-order walk of one function. A local holds data computed from forward's inputs (level 2), the
    inputs or copies of them (1), or neither (0: shapes, fresh buffers, parameters). Values assigned in
    `with torch.cuda.graph(...)` are 0: every replay recomputes them."""

    def __init__(self, src: _Source, func: ast.FunctionDef, selfname: str | None, methods: dict, module: dict,
                 owner: dict, params: dict[str, int]):
        self.src, self.selfname, self.methods, self.module, self.owner = src, selfname, methods, module, owner
        self.caching: list[tuple[ast.AST, str]] = []
        self.counting: list[tuple[ast.AST, str]] = []
        self.calls: list[tuple[ast.FunctionDef, dict[str, int]]] = []  # callee, level of each parameter
        body = list(_local_walk(func))
        self.local = {a.arg for a in _args(func)} | set(src.names) | {
            n.id for n in body if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        self.aliases: set[str] = set()  # locals holding something kept on self: `g = self._graphs.get(k)`
        for _ in range(3):
            for n in body:
                r = _root(n.value, True) if isinstance(n, ast.Assign) else None
                if isinstance(r, ast.Name) and self.keeps(r.id):
                    self.aliases |= {t.id for t in ast.walk(n.targets[0]) if isinstance(t, ast.Name)}
        self.levels = {k: v for k, v in params.items() if k != selfname}
        self.fresh: set[str] = set()  # locals holding a fresh allocation (a kernel's output buffer)
        self.block(func.body, False)

    def keeps(self, name: str) -> bool:
        """Does `name` outlive the call (self, something kept on self, a module global)?"""
        return name == self.selfname or name in self.aliases or name not in self.local

    def level(self, e: ast.AST) -> int:
        if isinstance(e, ast.Name):
            return self.levels.get(e.id, 0)
        if isinstance(e, ast.Attribute):
            return 0 if e.attr in _META else self.level(e.value)
        if isinstance(e, ast.Call):
            f, attr = e.func, getattr(e.func, "attr", "")
            if self.src.resolve(f) in _ALLOC or _is_name(f, "len", "isinstance", "type") or attr in _META:
                return 0
            parts = [*e.args, *(k.value for k in e.keywords), *([f.value] if attr else [])]
            lvl = max(map(self.level, parts), default=0)
            return lvl if attr in _COPIES else 2 if lvl else 0
        if isinstance(e, ast.Lambda):
            return 0
        lvl = max(map(self.level, ast.iter_child_nodes(e)), default=0)
        return 2 if lvl and isinstance(e, (ast.BinOp, ast.UnaryOp, ast.Compare)) else lvl

    def block(self, stmts: list[ast.stmt], graph: bool) -> None:
        for s in stmts:
            inner = graph
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if isinstance(s, (ast.With, ast.AsyncWith)):
                for item in s.items:
                    self.exprs(item.context_expr, graph)
                    inner |= self.src.resolve(getattr(item.context_expr, "func", item.context_expr)) in _GRAPH
                    if item.optional_vars:
                        self.assign(item.optional_vars, item.context_expr, graph)
            elif isinstance(s, (ast.For, ast.AsyncFor)):
                self.exprs(s.iter, graph)
                self.assign(s.target, s.iter, graph)
            elif isinstance(s, (ast.Assign, ast.AnnAssign)) and s.value is not None:
                self.exprs(s.value, graph)
                for t in getattr(s, "targets", None) or [s.target]:
                    self.assign(t, s.value, graph)
            elif isinstance(s, ast.AugAssign):
                self.exprs(s.value, graph)
                if isinstance(r := _root(s.target), ast.Name) and self.keeps(r.id):
                    self.counting.append((s, f"augmented assignment to {ast.unparse(s.target)} in a call"))
                elif isinstance(r, ast.Name) and not graph:
                    self.levels[r.id] = max(self.levels.get(r.id, 0), self.level(s.value))
            else:
                for e in ast.iter_child_nodes(s):
                    if isinstance(e, ast.expr):
                        self.exprs(e, graph)
            for sub in [s, *getattr(s, "handlers", []), *getattr(s, "cases", [])]:
                for field in ("body", "orelse", "finalbody"):
                    self.block(getattr(sub, field, []), inner)

    def assign(self, t: ast.AST, value: ast.AST, graph: bool) -> None:
        lvl = 0 if graph else self.level(value)
        if isinstance(t, ast.Name):
            self.levels[t.id] = lvl
            fresh = isinstance(value, ast.Call) and self.src.resolve(value.func) in _ALLOC
            (self.fresh.add if fresh else self.fresh.discard)(t.id)
        elif isinstance(t, (ast.Tuple, ast.List, ast.Starred)):
            for e in ast.iter_child_nodes(t):
                self.assign(e, value, graph)
        elif isinstance(t, (ast.Attribute, ast.Subscript)) and isinstance(r := _root(t), ast.Name):
            if not self.keeps(r.id):
                self.levels[r.id] = max(self.levels.get(r.id, 0), lvl)
            elif lvl == 2:
                self.caching.append((t, f"keeps a value computed in forward in {ast.unparse(t)}"))
            elif any(ast.unparse(t) in map(ast.unparse, ast.iter_child_nodes(n)) for n in ast.walk(value)
                     if isinstance(n, (ast.BinOp, ast.UnaryOp))):  # self.n + 1, not self.h0.to(x.device)
                self.counting.append((t, f"updates {ast.unparse(t)} from itself in a call"))

    def exprs(self, e: ast.AST, graph: bool) -> None:
        for c in (x for x in [e, *_local_walk(e)] if isinstance(x, ast.Call)):
            f, args = c.func, [*c.args, *(k.value for k in c.keywords)]
            lvl = max(map(self.level, args), default=0)
            self.bind(c)
            r = _root(f.value if isinstance(f, ast.Attribute) else args[0] if args else None)
            kept = isinstance(r, ast.Name) and self.keeps(r.id)
            if isinstance(f, ast.Attribute) and f.attr in _MUTATORS and isinstance(r, ast.Name):
                if not kept and not graph:
                    self.levels[r.id] = max(self.levels.get(r.id, 0), lvl)
                if kept and f.attr in _GROWERS:
                    self.counting.append((c, f"grows {ast.unparse(f.value)} in a call"))
                if kept and lvl == 2 and not graph:
                    self.caching.append((c, f"keeps a value computed in forward in {ast.unparse(f.value)}"))
            elif kept and _is_name(f, "next"):
                self.counting.append((c, f"next({ast.unparse(args[0])}) advances kept state in a call"))
            elif kept and _is_name(f, "setattr") and len(args) > 2 and self.level(args[2]) == 2 and not graph:
                self.caching.append((c, "setattr keeps a value computed in forward"))
            elif lvl and not graph:  # a kernel launch or op writes the fresh output buffers it is given
                for a in c.args:
                    if isinstance(a, ast.Name) and a.id in self.fresh:
                        self.levels[a.id] = 2

    def bind(self, c: ast.Call) -> None:
        """Records a call of a module function or of a method on self, with each parameter's level."""
        f = c.func
        if isinstance(f, ast.Name) and f.id in self.module:
            callee = self.module[f.id]
        elif (isinstance(f, ast.Attribute) and f.attr in self.methods
              and _is_name(f.value, self.selfname or "")):
            callee = self.methods[f.attr]
        else:
            return
        skip = 1 if isinstance(f, ast.Attribute) and self.owner[callee][0] else 0
        names = [a.arg for a in [*callee.args.posonlyargs, *callee.args.args][skip:]]
        lv, kw = [self.level(a) for a in c.args], {k.arg: self.level(k.value) for k in c.keywords}
        bound = dict(zip(names, lv, strict=False)) | {k: v for k, v in kw.items() if k}
        top = max([*lv, *kw.values()], default=0)  # what *args / **kwargs receive
        bound |= {a.arg: top for a in (callee.args.vararg, callee.args.kwarg) if a}
        self.calls.append((callee, bound))

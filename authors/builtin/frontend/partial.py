"""Partial capture: a forward torch.fx cannot trace whole, captured as regions around what it cannot.

A branch or loop on a tensor's value (`if x.mean() > 0:`, `while err.item() > tol:`) or `.item()`
feeding Python has no single graph. The forward is kept as written and split into blocks of
statements (the function body and each branch or loop body); each block is covered greedily by
the longest runs of statements torch.fx traces, and what it cannot trace stays Python, running
as PyTorch in the candidate. Each run (a `Segment`) is traced as a function of the variables it
reads, with the values they held when the forward ran on the problem's inputs, and is guarded
at run time: its kernels run only when those variables again have the shapes, layouts and
dtypes (and baked-in plain values) it was built for, else its own statements run.

Rationale: keeping the user's control flow as Python makes every path correct by construction,
whichever way a branch goes on the evaluator's inputs; the guard makes a region's kernels safe
whatever a path left in its variables. Dynamo-style graph breaks would split at bytecode and
resume in generated functions that cannot be written back as a readable solution.py; tracing
each branch as a guarded graph would need the branch condition itself captured.

Both sides of a branch get kernels: observe.py runs the forward again with each branch's other
way forced, and a region's inputs are those of the first run that reached it.
"""

from __future__ import annotations

import ast
import itertools
import operator
from collections import Counter
from collections.abc import Callable
from typing import Any

import torch
import torch.fx

from ....eval.harness import seeded
from ....eval.problem import load_problem
from .capture import Captured, CaptureError, lower_traced, split_problem_source, trace_graph
from .ir import PartialForward, Program, Segment, TensorMeta
from .observe import BLOCKS as _BLOCKS
from .observe import observe

_CONTROL = (ast.Break, ast.Continue, ast.Raise, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
            ast.Global, ast.Nonlocal, ast.Delete, ast.Import, ast.ImportFrom, ast.Try, ast.With,
            ast.Yield, ast.YieldFrom, ast.Await, ast.Lambda)


def capture_partial(problem_source: str, filename: str = "<problem>", size: str = "small") -> Captured:
    """The forward in captured regions around the code torch.fx cannot trace; CaptureError when
    no region could be captured."""
    preamble, init_src, forward_args, forward_src = split_problem_source(problem_source)
    fwd = ast.parse(forward_src).body[0]
    assert isinstance(fwd, ast.FunctionDef)
    runs = observe(problem_source, filename, "small", fwd, None)
    with torch.device("cpu" if size == "small" else "meta"):
        problem = load_problem(problem_source, size, filename)
        if size != "small":
            runs = observe(problem_source, filename, size, fwd, runs)
        seeded(0)
        model = problem.model_cls(*problem.get_init_inputs())
        snaps: dict[tuple[int, int], dict[str, Any]] = {}
        for run in runs:
            for key, env in run.snaps.items():
                snaps.setdefault(key, env)
        cover = _Cover(model, problem.module.__dict__, fwd, snaps)
        body = cover.block(fwd.body)
    if not cover.segments:
        raise CaptureError("no straight-line region of the forward could be traced")
    fwd.body = body
    program = Program(inputs=[], ops=[], outputs=None, init_source=init_src, forward_args=forward_args,
                      forward_signature=ast.unparse(fwd.args))
    return Captured(program=program, module=model, problem=problem, preamble=preamble,
                    partial=PartialForward(forward=ast.unparse(fwd), segments=cover.segments))


# ---- covering the blocks with traced segments ----------------------------------------------------


class _Cover:
    def __init__(self, model: torch.nn.Module, scope: dict[str, Any], fwd: ast.FunctionDef,
                 snaps: dict[tuple[int, int], dict[str, Any]]) -> None:
        self.model, self.scope, self.snaps = model, scope, snaps
        self.blocks = itertools.count()
        self.segments: list[Segment] = []
        self.barriers: dict[tuple[int, int], bool] = {}
        self.locals = {a.arg for a in fwd.args.args} | _stores(fwd.body)
        self.loads = Counter(_loads(fwd.body))  # before any run is replaced by its marker
        self.by_python: set[str] = set()
        """Variables set by statements kept as Python: values read from tensors (`.item()`)."""

    def block(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        """`stmts` with each longest traceable run replaced by its segment's marker."""
        block, out, i = next(self.blocks), [], 0
        while i < len(stmts):
            got = self._longest(stmts, block, i)
            if got is None:  # kept as written; its own blocks are covered in turn
                s = stmts[i]
                if isinstance(s, ast.For):
                    self.by_python |= {n.id for n in ast.walk(s.target) if isinstance(n, ast.Name)}
                elif not any(getattr(s, field, None) for field in _BLOCKS):
                    self.by_python |= _stores([s])
                for field in _BLOCKS:
                    if getattr(s, field, None):
                        setattr(s, field, self.block(getattr(s, field)))
                out.append(s)
                i += 1
                continue
            end, seg = got
            out.append(ast.Expr(ast.Name(f"__segment_{len(self.segments)}__", ast.Load())))
            self.segments.append(seg)
            for s in stmts[i:end]:
                self._skip(s)
            i = end
        return out

    def _skip(self, s: ast.stmt) -> None:
        """Number the blocks inside a covered statement, as _instrument did."""
        for field in _BLOCKS:
            if getattr(s, field, None):
                next(self.blocks)
                for inner in getattr(s, field):
                    self._skip(inner)

    def _longest(self, stmts: list[ast.stmt], block: int, i: int) -> tuple[int, Segment] | None:
        env = self.snaps.get((block, i))
        if env is None or self._barrier(stmts[i], block, i):  # unreached, or untraceable alone
            return None
        # A run never crosses a statement that cannot be traced alone: one trace per statement
        # spares retracing what lies before it (an unrolled loop costs seconds) for every end.
        limit = next((j for j in range(i + 1, len(stmts)) if self._barrier(stmts[j], block, j)), len(stmts))
        for end in range(limit, i, -1):
            seg = self._segment(stmts[i:end], env)
            if seg is not None and seg.program.ops:
                return end, seg
        return None

    def _barrier(self, stmt: ast.stmt, block: int, j: int) -> bool:
        if (block, j) not in self.barriers:
            env = self.snaps.get((block, j))
            self.barriers[(block, j)] = env is not None and self._segment([stmt], env) is None
        return self.barriers[(block, j)]

    def _segment(self, run: list[ast.stmt], env: dict[str, Any]) -> Segment | None:
        nodes = [n for s in run for n in ast.walk(s)]
        if any(isinstance(n, _CONTROL) or isinstance(n, ast.Return) and n is not run[-1] for n in nodes):
            return None
        if any(_changes_state(n) for n in nodes):
            return None  # `self.count += 1`, `self.buf.mul_(m)` run once while tracing, not in the graph
        reads = _reads_before_writes(run)
        if any(n in self.locals and n not in env for n in reads):
            return None  # a local this path has not set: the statements would raise here
        names = sorted((n for n in self.locals if n in reads and n in env and n != "self"),
                       key=list(env).index)
        # A loop or branch on a value read from a tensor stays Python (its bodies are covered):
        # traced, it would unroll for the one value seen while capturing.
        headers = set(_loads([h for n in nodes for h in _headers(n)]))
        if any(n in self.by_python and n in headers and not isinstance(env[n], torch.Tensor) for n in names):
            return None
        returns = isinstance(run[-1], ast.Return)
        inside = Counter(_loads(run))
        assigns = [] if returns else sorted(n for n in _stores(run)
                                            if self.loads[n] > inside[n] or n in reads)
        kinds = {type(env[n]) for n in names}
        attempts = [(float, int)] if int in kinds else []
        attempts += [(float,)] if float in kinds else []
        for runtime in [*attempts, ()]:
            seg = self._trace(run, env, names, assigns, returns, runtime)
            if seg is not None:
                return seg
        return None

    def _trace(self, run: list[ast.stmt], env: dict[str, Any], names: list[str], assigns: list[str],
               returns: bool, runtime: tuple[type, ...]) -> Segment | None:
        """The run traced as a function of its tensors and the numbers of the `runtime` types (read
        at run time: plain fx only); other plain values are baked in through the function's globals."""
        guard: list[tuple[str, Any]] = []
        args: list[str] = []
        scope = dict(self.scope)
        for n in names:
            v = env[n]
            if isinstance(v, torch.Tensor):
                guard.append((n, TensorMeta(tuple(v.shape), v.dtype, tuple(v.stride()))))
                args.append(n)
            elif type(v) in runtime:
                guard.append((n, type(v)))
                args.append(n)
            elif v is None or isinstance(v, (bool, int, float, str)) or (
                    isinstance(v, tuple) and all(isinstance(x, (bool, int)) for x in v)):
                guard.append((n, v))
                scope[n] = v
            else:
                return None  # a list, a module, an object: its identity or mutation is not a value
        outs = f"({', '.join(assigns)},)" if assigns else "()"
        body = [*run] if returns else [*run, ast.parse(f"return {outs}").body[0]]
        params = ast.arguments([], [ast.arg(a) for a in ["self", *args]], None, [], [], None, [])
        fn = ast.FunctionDef("forward", params, body, [], None, None)
        values = [env[a] for a in args]
        try:
            exec(compile(ast.fix_missing_locations(ast.Module([fn], [])), "<segment>", "exec"), scope)
            root = _sharing(self.model, scope["forward"])
            gm, recorder = trace_graph(root, values, shapes=not runtime)
            program = lower_traced(gm, root, values, recorder, prefix=str(len(self.segments)))
        except Exception:
            return None
        ints = {n for n, k in guard if k is int}
        if ints and not _ints_keep_shapes(gm, program, ints):
            return None
        return Segment(program=program, statements="\n".join(ast.unparse(s) for s in run), guard=guard,
                       assigns=assigns, returns=returns)


# A run-time integer may only pick an element (`x[:, t]`, `x.select(1, t)`) or scale a tensor
# (`h * t`): then every value keeps the shape it was captured with, whatever its value.
_SCALING = {operator.add, operator.sub, operator.mul, operator.truediv, operator.pow, torch.add, torch.sub,
            torch.mul, torch.div, "add", "sub", "mul", "div"}


def _ints_keep_shapes(gm: torch.fx.GraphModule, program: Program, ints: set[str]) -> bool:
    tensors = {name for name, v in program.values.items() if v.is_tensor}
    for node in gm.graph.nodes:
        if node.op != "placeholder" or node.target not in ints:
            continue
        for user in node.users:
            first = user.args[0] if user.args else None
            on_tensor = isinstance(first, torch.fx.Node) and first.name in tensors
            if user.target is operator.getitem and on_tensor:
                index = user.args[1] if isinstance(user.args[1], tuple) else (user.args[1],)
                if node in index and not any(isinstance(i, slice) for i in index if _mentions(i, node)):
                    continue
            elif user.target == "select" and on_tensor and user.args[2:] == (node,) or (
                    user.target in _SCALING and len(user.args) == 2 and not user.kwargs
                    and any(isinstance(a, torch.fx.Node) and a.name in tensors for a in user.args)):
                continue
            return False
    return True


def _mentions(index: Any, node: torch.fx.Node) -> bool:
    return isinstance(index, slice) and node in (index.start, index.stop, index.step)


def _sharing(model: torch.nn.Module, forward: Callable) -> torch.nn.Module:
    """A module whose forward is `forward` and whose state is `model`'s own (not a copy)."""
    cls = type("Segment", (type(model),), {"forward": forward})
    root = cls.__new__(cls)
    object.__setattr__(root, "__dict__", model.__dict__)
    return root


def _changes_state(node: ast.AST) -> bool:
    """An attribute assigned, or an attribute's tensor changed in place (`self.buf.mul_(m)`,
    `self.buf[0] = v`): plain fx runs these on the module's real state instead of recording them."""
    if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
        return True
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
        return isinstance(node.value, ast.Attribute)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        name = node.func.attr
        return name.endswith("_") and not name.startswith("_") and isinstance(node.func.value, ast.Attribute)
    return False


def _headers(node: ast.AST) -> list[ast.expr]:
    """What decides a compound statement's path: a loop's iterable, a branch's or loop's test."""
    if isinstance(node, ast.For):
        return [node.iter]
    return [node.test] if isinstance(node, (ast.If, ast.While, ast.IfExp)) else []


def _stores(stmts: list[ast.stmt]) -> set[str]:
    """Names the statements assign (a comprehension's own variables are not the function's)."""
    nodes = [n for s in stmts for n in ast.walk(s)]
    own = {id(t) for c in nodes if isinstance(c, ast.comprehension) for t in ast.walk(c.target)}
    return {n.id for n in nodes
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and id(n) not in own}


def _loads(stmts: list[ast.stmt]) -> list[str]:
    """Every name read in the statements, once per read."""
    return [n.id for s in stmts for n in ast.walk(s)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]


def _reads_before_writes(run: list[ast.stmt]) -> set[str]:
    """Names a run reads before it assigns them (its inputs)."""
    written: set[str] = set()
    reads: set[str] = set()
    for s in run:
        reads |= set(_loads([s])) - written
        written |= _stores([s])
    return reads

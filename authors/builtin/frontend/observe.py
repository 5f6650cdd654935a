"""Running a forward on the problem's inputs to see what each of its blocks starts with.

The forward's AST is instrumented: before each statement of each block (the body, each branch or
loop body) it records the local variables, and every `if` / `while` test and `for` iterable goes
through a decision hook. The first run takes the natural path; later runs force one unexplored
decision the other way each, so both sides of a branch are reached. At a size other than
"small" the forward runs on meta tensors, replaying each small run with its forced decision and
the values it converted to Python (`bool`, `.item()`, ...) in order. partial.py covers the
blocks with traced regions from what these runs saw.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import itertools
from collections.abc import Callable, Iterator
from typing import Any

import torch

from ....eval.harness import seeded
from ....eval.problem import load_problem
from .capture import CaptureError

BLOCKS = ("body", "orelse", "finalbody")
"""The fields of a compound statement that hold blocks, in the order both modules number them."""
MAX_RUNS = 8  # the forward with natural decisions, then with one branch forced each
MAX_DECISIONS = 10_000  # a forced loop that never ends is abandoned
_CONVERSIONS = ("__bool__", "item", "__int__", "__float__", "__index__", "tolist")


class Run:
    """One run of the instrumented forward: the locals at each block boundary (first visit),
    each decision's outcomes, and the tensor-to-Python conversions in order."""

    def __init__(self, force: tuple[int, bool] | None, replay: list[Any] | None) -> None:
        self.force, self.forced = force, force
        self.replay = list(replay) if replay is not None else None
        self.snaps: dict[tuple[int, int], dict[str, Any]] = {}
        self.outcomes: dict[int, set[bool]] = {}
        self.converted: list[Any] = []
        self.decisions = 0

    def snap(self, block: int, at: int, env: dict[str, Any]) -> None:
        self.snaps.setdefault((block, at), dict(env))

    def decide(self, point: int, value: Any) -> bool:
        self.decisions += 1
        if self.decisions > MAX_DECISIONS:
            raise RuntimeError("a forced loop did not end")
        taken = bool(value)
        if self.force is not None and self.force[0] == point:
            taken, self.force = self.force[1], None
        self.outcomes.setdefault(point, set()).add(taken)
        return taken

    def loop(self, point: int, iterable: Any) -> Iterator[Any]:
        """A `for` loop's items; forced in, an empty range runs once on its start, forced out, none."""
        if self.force == (point, False):
            self.force = None
            self.outcomes.setdefault(point, set()).add(False)
            return
        entered = False
        for item in iterable:
            entered = True
            yield item
        self.outcomes.setdefault(point, set()).add(entered)
        if not entered and self.force == (point, True) and isinstance(iterable, range):
            self.force = None
            yield iterable.start

    @contextlib.contextmanager
    def conversions(self) -> Iterator[None]:
        """Record each tensor-to-Python conversion; with a replay, answer meta tensors' from it."""
        originals = {n: getattr(torch.Tensor, n) for n in _CONVERSIONS}

        def wrap(fn: Callable) -> Callable:
            def convert(t: torch.Tensor, *args: Any) -> Any:
                if self.replay is not None and t.device.type == "meta":
                    if not self.replay:
                        raise RuntimeError("the replayed run converted more values than the small run")
                    return self.replay.pop(0)
                out = fn(t, *args)
                self.converted.append(out)
                return out
            return convert

        for n, fn in originals.items():
            setattr(torch.Tensor, n, wrap(fn))
        try:
            yield
        finally:
            for n, fn in originals.items():
                setattr(torch.Tensor, n, fn)


def observe(problem_source: str, filename: str, size: str, fwd: ast.FunctionDef,
             small: list[Run] | None) -> list[Run]:
    """The forward's runs at `size`: natural, then each unexplored branch forced (at the small
    size), or the small runs replayed with their conversions (at any other)."""
    points = itertools.count()
    tree = copy.deepcopy(fwd)
    tree.body = _instrument(tree.body, itertools.count(), points)
    tree.name = "__observed_forward__"
    device = "cpu" if size == "small" else "meta"

    def run(force: tuple[int, bool] | None, replay: list[Any] | None) -> Run:
        with torch.device(device):
            problem = load_problem(problem_source, size, filename)
            scope = dict(problem.module.__dict__)
            got = Run(force, replay)
            scope.update(__snap__=got.snap, __decide__=got.decide, __loop__=got.loop)
            exec(compile(ast.fix_missing_locations(ast.Module([tree], [])), filename, "exec"), scope)
            seeded(0)
            model = problem.model_cls(*problem.get_init_inputs())
            seeded(1)
            inputs = list(problem.get_inputs())
            with torch.no_grad(), got.conversions():
                scope["__observed_forward__"](model, *inputs)
            return got

    plan = [(r.forced, r.converted) for r in small] if small is not None else [(None, None)]
    try:
        runs = [run(*plan[0])]
    except Exception as e:
        raise CaptureError(f"the forward fails on the problem's inputs: {type(e).__name__}: {e}") from None
    for force, replay in plan[1:]:
        with contextlib.suppress(Exception):  # a replay can part ways with its small run: no regions
            runs.append(run(force, replay))
    tried: set[tuple[int, bool]] = set()
    while small is None and len(runs) < MAX_RUNS:
        seen: dict[int, set[bool]] = {}
        for r in runs:
            for p, o in r.outcomes.items():
                seen.setdefault(p, set()).update(o)
        todo = [(p, not next(iter(o))) for p, o in sorted(seen.items()) if len(o) == 1]
        todo = [f for f in todo if f not in tried]
        if not todo:
            break
        tried.add(todo[0])
        with contextlib.suppress(Exception):  # a forced path may fail: its regions stay PyTorch
            runs.append(run(todo[0], None))
    return runs


def _instrument(stmts: list[ast.stmt], blocks: Iterator[int], points: Iterator[int]) -> list[ast.stmt]:
    """`stmts` with `__snap__(block, i, locals())` before each statement and at the end, each `if`
    / `while` test passed through `__decide__` and each `for` iterable through `__loop__`. Blocks
    are numbered as partial.py's covering numbers them."""
    block = next(blocks)
    out: list[ast.stmt] = []
    for i, s in enumerate([*stmts, None]):
        out.append(ast.parse(f"__snap__({block}, {i}, locals())").body[0])
        if s is None:
            break
        for field in BLOCKS:
            if getattr(s, field, None):
                setattr(s, field, _instrument(getattr(s, field), blocks, points))
        if isinstance(s, (ast.If, ast.While)):
            s.test = ast.Call(ast.Name("__decide__", ast.Load()), [ast.Constant(next(points)), s.test], [])
        elif isinstance(s, ast.For):
            s.iter = ast.Call(ast.Name("__loop__", ast.Load()), [ast.Constant(next(points)), s.iter], [])
        out.append(s)
    return out

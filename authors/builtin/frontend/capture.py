"""Capturing the reference forward as a graph (torch.fx) with shapes, and its __init__ as text.

`capture()` traces `Model` with torch.fx, propagates shapes by running the traced graph on the
problem's inputs (real CPU tensors at the small size, meta tensors at full size), and lowers
every node into the IR. Where plain fx fails on Python control flow over shapes (a time loop of
`range(x.shape[1])`), a meta-tensor tracer retries with concrete shapes and unrolls it. When both
fail (data-dependent control flow, unsupported constructs), it raises CaptureError and the
author captures the forward in regions around what fx cannot trace (partial.py).
"""

from __future__ import annotations

import ast
import contextlib
import copy
import inspect
import operator
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx
from torch.fx.experimental.meta_tracer import MetaTracer

from ....eval.harness import seeded
from ....eval.problem import LoadedProblem, load_problem
from .constants import ConstantRecorder
from .functionalize import functionalize
from .ir import PartialForward, Program
from .lower import lower_graph


class CaptureError(Exception):
    """The reference forward could not be captured as a graph."""


@dataclass
class Captured:
    program: Program
    module: torch.nn.Module
    problem: LoadedProblem
    preamble: str
    """Top-level definitions of the problem other than Model / get_inputs / get_init_inputs /
    SMALL (helper classes, constants, imports) that ModelNew's __init__ may need."""
    traced_code: str = ""
    """fx's Python code of the traced forward (constants baked in), to compare captures."""
    partial: PartialForward | None = None
    """Set when the forward was captured in regions around code fx cannot trace (partial.py);
    `program` is then empty but for the reference's __init__ and forward signature."""


def split_problem_source(source: str) -> tuple[str, str, list[str], str]:
    """(preamble, ModelNew __init__ source, forward argument names, forward source) from a
    problem's source."""
    tree = ast.parse(source)
    keep: list[ast.stmt] = []
    model: ast.ClassDef | None = None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            model = node
        elif not _is_harness_part(node):
            keep.append(node)
    if model is None:
        raise CaptureError("the problem defines no class Model")
    init = next((n for n in model.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
    fwd = next((n for n in model.body if isinstance(n, ast.FunctionDef) and n.name == "forward"), None)
    if fwd is None:
        raise CaptureError("Model has no forward method")
    forward_args = [a.arg for a in fwd.args.args[1:]]
    if fwd.args.vararg or fwd.args.kwonlyargs or fwd.args.kwarg:
        raise CaptureError("Model.forward takes *args/**kwargs; only positional arguments are supported")
    init_src = ""
    if init is not None:
        init = _RenameSuper().visit(init)
        init_src = ast.unparse(ast.fix_missing_locations(init))
    preamble = ast.unparse(ast.Module(body=keep, type_ignores=[]))
    return preamble, init_src, forward_args, ast.unparse(_RenameSuper().visit(fwd))


def model_class_as(source: str, name: str) -> str:
    """The problem's Model class, renamed, with `super(Model, self)` made `super()`."""
    tree = ast.parse(source)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model")
    cls = _RenameSuper().visit(cls)
    cls.name = name
    return ast.unparse(ast.fix_missing_locations(cls))


def _is_harness_part(node: ast.stmt) -> bool:
    """get_inputs / get_init_inputs / SMALL / the docstring: the problem's, not the model's."""
    if isinstance(node, ast.FunctionDef):
        return node.name in ("get_inputs", "get_init_inputs")
    if isinstance(node, ast.Assign):
        return any(isinstance(t, ast.Name) and t.id == "SMALL" for t in node.targets)
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(
        node.value.value, str)


class _RenameSuper(ast.NodeTransformer):
    """`super(Model, self).__init__()` -> `super().__init__()`: ModelNew must not name Model."""

    def visit_Call(self, node: ast.Call) -> Any:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "super" and node.args:
            node.args = []
        return node


# Tensor factories a forward may call with traced sizes or devices (`torch.ones(t, t,
# device=x.device)` for a causal mask). torch.fx cannot intercept them (the proxies are not
# tensors), so the tracer records them as graph nodes while it traces.
_FACTORIES = ("ones", "zeros", "full", "empty", "arange", "eye", "tril_indices", "triu_indices")


@contextlib.contextmanager
def _factories_traced(tracer: torch.fx.Tracer) -> Iterator[None]:
    """While tracing, torch.<factory> called with a proxy argument becomes a graph node."""
    originals = {name: getattr(torch, name) for name in _FACTORIES}

    def wrap(fn: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            leaves = [*args, *kwargs.values()]
            leaves += [x for a in args if isinstance(a, (tuple, list)) for x in a]
            if any(isinstance(x, torch.fx.Proxy) for x in leaves):
                return tracer.create_proxy("call_function", fn, args, kwargs)
            return fn(*args, **kwargs)
        return call

    for name, fn in originals.items():
        setattr(torch, name, wrap(fn))
    try:
        yield
    finally:
        for name, fn in originals.items():
            setattr(torch, name, fn)


@contextlib.contextmanager
def _item_assignment_traced() -> Iterator[None]:
    """While tracing, `y[:, 0] = v` on a traced value becomes an `operator.setitem` node (fx's
    proxies refuse item assignment). Graph order keeps it between the reads before and after."""
    def setitem(self: torch.fx.Proxy, key: Any, value: Any) -> None:
        self.tracer.create_proxy("call_function", operator.setitem, (self, key, value), {})

    had = "__setitem__" in vars(torch.fx.Proxy)
    old = vars(torch.fx.Proxy).get("__setitem__")
    torch.fx.Proxy.__setitem__ = setitem  # type: ignore[method-assign]
    try:
        yield
    finally:
        if had:
            torch.fx.Proxy.__setitem__ = old  # type: ignore[method-assign]
        else:
            del torch.fx.Proxy.__setitem__


class _FactoryTracer(torch.fx.Tracer):
    def trace(self, root: Any, concrete_args: Any = None) -> torch.fx.Graph:
        with _factories_traced(self), _item_assignment_traced():
            return super().trace(root, concrete_args)


# An unrolled loop is generated, compiled into one source and replayed op by op: 200 LSTM steps
# (3400 nodes) generate in ~11 s; far longer loops are left to the whole-forward strategies.
MAX_UNROLLED_NODES = 20_000


class _ShapeTracer(MetaTracer):
    """The fallback when plain fx fails: proxies carry meta tensors, so `x.shape`, `x.size()` and
    `x.dim()` are concrete numbers and Python control flow on them runs while tracing (`for t in
    range(x.shape[1])` unrolls). The graph is specialised to the traced shapes: capture() traces
    at the size the candidate is evaluated at.

    Registered buffers are traced as graph inputs (`get_attr`), not read as values: Python code
    on a buffer (`self.mask[:, :t, :t] == 0` for a causal mask) then stays in the graph instead of
    being baked into a tensor constant the size of the buffer."""

    proxy_buffer_attributes = True

    def iter(self, obj: torch.fx.Proxy) -> Iterator[Any]:
        """`for p in x.unbind(1)`, `[f(p) for p in x.chunk(3)]`: the meta value says how many
        parts there are, so the loop unrolls over `obj[i]`."""
        meta = getattr(obj, "_tensor_meta", None)
        if isinstance(meta, (tuple, list)):
            return iter([obj[i] for i in range(len(meta))])
        return super().iter(obj)

    def trace_inputs(self, root: torch.nn.Module, inputs: list[Any]) -> torch.fx.Graph:
        names = list(inspect.signature(root.forward).parameters)
        metas = {n: x.to("meta") for n, x in zip(names, inputs, strict=False) if isinstance(x, torch.Tensor)}
        concrete = {n: x for n, x in zip(names, inputs, strict=False) if not isinstance(x, torch.Tensor)}
        with _factories_traced(self), _item_assignment_traced(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "could not compute metadata": shapes it could are kept
            return self.trace(root, meta_args=metas, concrete_args=concrete or None)


def capture(problem_source: str, filename: str = "<problem>", size: str = "small") -> Captured:
    """The problem's graph at `size`: on real CPU tensors at the small size, on the meta device
    (shapes only, nothing allocated) at any other. Capturing at the size the candidate will be
    evaluated at matters: fx bakes Python values the model derives from its init arguments (a
    1/sqrt(head_dim) scale, a reshape size, a norm's shape) into the graph as constants."""
    if size == "small":
        with torch.device("cpu"):
            problem = load_problem(problem_source, size, filename)
            return _lower(problem_source, problem, *_trace(problem))
    with torch.device("meta"):
        problem = load_problem(problem_source, size, filename)
        model, inputs, gm, recorder = _trace(problem)
        try:
            return _lower(problem_source, problem, model, inputs, gm, recorder)
        except CaptureError:
            # Shapes alone can fail to propagate (an op without a meta kernel, a forward that
            # reads values). The small capture may stand in only if fx traces the same code at
            # both sizes: then no value baked into the graph depends on the size.
            small = capture(problem_source, filename, "small")
            if gm.code != small.traced_code:
                raise
            return small


def _trace(problem: LoadedProblem) -> tuple[torch.nn.Module, list[Any], torch.fx.GraphModule,
                                            ConstantRecorder]:
    seeded(0)
    model = problem.model_cls(*problem.get_init_inputs())
    seeded(1)
    inputs = list(problem.get_inputs())
    return model, inputs, *trace_graph(model, inputs)


def trace_graph(model: torch.nn.Module, inputs: list[Any], shapes: bool = True,
                ) -> tuple[torch.fx.GraphModule, ConstantRecorder]:
    """`model.forward` as a graph: plain fx first, then (if `shapes`) the concrete-shape tracer on
    `inputs`; the recorder names the constants made while tracing."""
    own = _attribute_names(model)
    recorder = ConstantRecorder()
    versions = _state_versions(model)
    try:
        with recorder:
            graph = _FactoryTracer().trace(model)
        if _state_versions(model) != versions:
            # Plain fx reads buffers as tensors: `self.buf.mul_(m)` ran on the real buffer, unrecorded.
            raise CaptureError("the forward changes a buffer in place")
        return _graph_module(model, graph, own), recorder
    except Exception as e:
        first = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
        if not shapes:
            raise CaptureError(f"torch.fx could not trace Model.forward: {first}") from None
    try:
        with recorder:
            graph = _ShapeTracer().trace_inputs(model, inputs)
    except Exception:
        try:  # a buffer read as a value (`if self.steps > 0`) needs the buffer itself
            tracer = _ShapeTracer()
            tracer.proxy_buffer_attributes = False
            with recorder:
                graph = tracer.trace_inputs(model, inputs)
        except Exception:
            raise CaptureError(f"torch.fx could not trace Model.forward: {first}") from None
    if len(graph.nodes) > MAX_UNROLLED_NODES:
        n = len(graph.nodes)
        raise CaptureError(f"torch.fx could not trace Model.forward: {first}; unrolled with concrete "
                           f"shapes it has {n} nodes (limit {MAX_UNROLLED_NODES})") from None
    return _graph_module(model, graph, own), recorder


def _state_versions(model: torch.nn.Module) -> list[int]:
    """The in-place version counters of the module's parameters and buffers."""
    return [t._version for t in [*model.parameters(), *model.buffers()]]


def _graph_module(model: torch.nn.Module, graph: torch.fx.Graph, own: set[str]) -> torch.fx.GraphModule:
    """The GraphModule, and `model` as its __init__ left it: fx stores the tensor constants it
    makes while tracing (`_tensor_constant0`) on the traced module; the GraphModule keeps its own
    copies, and lowering tells them from the user's attributes by their absence from `model`."""
    gm = torch.fx.GraphModule(model, graph)
    for name in _attribute_names(model) - own:
        delattr(model, name)
    return gm


def _attribute_names(model: torch.nn.Module) -> set[str]:
    """Plain attributes, parameters and buffers of `model` itself (fx registers a Parameter it
    meets outside the module's parameters as `_param_constant<i>`)."""
    return {*vars(model), *model._parameters, *model._buffers}


def _lower(problem_source: str, problem: LoadedProblem, model: torch.nn.Module, inputs: list[Any],
           gm: torch.fx.GraphModule, recorder: ConstantRecorder) -> Captured:
    preamble, init_src, forward_args, forward_src = split_problem_source(problem_source)
    program = lower_traced(gm, model, inputs, recorder)
    program.init_source = init_src
    program.forward_args = forward_args
    fwd = ast.parse(forward_src).body[0]
    assert isinstance(fwd, ast.FunctionDef)
    program.forward_signature = ast.unparse(fwd.args)  # defaults included: get_inputs may omit them
    return Captured(program=program, module=model, problem=problem, preamble=preamble, traced_code=gm.code)


def lower_traced(gm: torch.fx.GraphModule, model: torch.nn.Module, inputs: list[Any],
                 recorder: ConstantRecorder, prefix: str = "") -> Program:
    """The traced graph's program, with in-place ops made functional where that is safe; `prefix`
    keeps its value and constant names apart from other programs' in one forward."""
    functional = torch.fx.GraphModule(gm, copy.deepcopy(gm.graph))
    if functionalize(functional):
        with contextlib.suppress(Exception):  # the graph as traced is always right: lowered below
            return lower_graph(functional, model, inputs, recorder.expr_of, prefix)
    try:
        return lower_graph(gm, model, inputs, recorder.expr_of, prefix)
    except Exception as e:
        raise CaptureError(f"could not lower the traced graph: {type(e).__name__}: {e}") from None

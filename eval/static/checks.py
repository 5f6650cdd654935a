"""Static checks: reject a candidate whose source could fool the evaluator, before any of it runs.

Each named check (CHECKS) yields (node, what it does) over the parsed candidate (source.py);
`run_static_checks` turns those into `StaticFailure`s in source order. Two kinds of check: an
ALLOWLIST of what a candidate may import and reach (allow.py: imports, attribute chains,
decorators, no reflective access), and named checks for the tricks that stay possible inside it
(timer patching, side streams, caching, precision...). Source checks miss code they cannot see;
the run-time audit hook and integrity check (eval/candidate/audit.py) and the runtime defences of
EVALUATION.md
(isolation, rotated inputs, wall-clock cross-check) stay.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from . import allow as A
from .flow import flow
from .source import (
    _AMP,
    _CACHES,
    _DUNDERS,
    _DYNAMIC,
    _GLOBAL,
    _IDENTITY,
    _INTROSPECT,
    _LOW,
    _LOW_STRINGS,
    _STREAMS,
    _THREADS,
    _TIMING,
    Findings,
    StaticFailure,
    _is_const,
    _is_name,
    _is_str,
    _local_walk,
    _prefixes,
    _Source,
)

__all__ = ["CHECKS", "StaticFailure", "problem_is_fp32", "run_static_checks"]


# --- the checks -------------------------------------------------------------------------------------------


def timer_patching(src: _Source) -> Findings:
    """Assigning, deleting or setattr-ing anything under torch.cuda, time, triton.testing, torch.profiler
    (synchronize, Event.elapsed_time, perf_counter, do_bench), `type(x).attr = ...`, unittest.mock.
    Why: the timer runs in the candidate's process; a patched one reports what the candidate wants."""
    for node, dotted in src.patched():
        if _TIMING.match(dotted):
            yield node, f"assigns {dotted}"
    for n in src.nodes:
        if isinstance(n, ast.Attribute) and isinstance(n.ctx, (ast.Store, ast.Del)):
            chain = [n]
            while isinstance(chain[-1], (ast.Attribute, ast.Subscript)):
                chain.append(chain[-1].value)
            if isinstance(chain[-1], ast.Call) or any(getattr(c, "attr", "") == "__class__" for c in chain):
                yield n, f"assigns {ast.unparse(n)}, patching a class or computed object"
    yield from src.uses(_prefixes("unittest.mock mock"))


def threads_or_processes(src: _Source) -> Findings:
    """Threads, processes, signals, asyncio, os.fork/system/popen/spawn. Why: work on another thread or
    process escapes the timer, and a helper can outlive forward or tamper with the harness."""
    yield from src.uses(_THREADS)


def side_stream(src: _Source) -> Findings:
    """Creating or switching CUDA streams (Stream, stream(), set_stream, ExternalStream, wait_stream).
    Why: kernels queued on another stream escape events recorded on the current one. A CUDA graph
    replayed with torch.cuda.graph + g.replay() runs on the current stream and is fine."""
    yield from src.uses(_STREAMS)
    for n in src.nodes:
        if isinstance(n, ast.Attribute) and n.attr == "wait_stream":
            yield n, f"uses {ast.unparse(n)}"


def fallback_to_reference(src: _Source) -> Findings:
    """An except handler that does anything but raise, contextlib.suppress, `return` in `finally`, an
    `__exit__` that can return True. Why: a fallback hides a failing custom kernel behind PyTorch."""
    for n in src.nodes:
        if isinstance(n, (ast.Try, ast.TryStar)):
            for h in n.handlers:  # `except E as e: raise Clearer(...) from e` is fine
                if not all(isinstance(s, ast.Raise) for s in h.body):
                    yield h, "handler does more than re-raise: a failing kernel must fail, not fall back"
            for s in (x for f in n.finalbody for x in [f, *_local_walk(f)] if isinstance(x, ast.Return)):
                yield s, "'return' inside finally swallows exceptions"
        elif isinstance(n, ast.FunctionDef) and n.name in ("__exit__", "__aexit__") and any(
                isinstance(r, ast.Return) and not _is_const(r.value, None, False) for r in _local_walk(n)):
            yield n, f"{n.name} may return True, which swallows exceptions"
    yield from src.uses(_prefixes("contextlib.suppress"))


def calls_reference(src: _Source) -> Findings:
    """Any use of the name `Model` (instantiating; subclassing, which inherits the reference forward;
    super(Model, ...); mod.Model; "Model"), relative imports, importing a problem / reference / evaluator
    module. Why: the candidate must compute the output itself."""
    for n in src.nodes:
        if _is_name(n, "Model") or getattr(n, "attr", "") == "Model" or _is_const(n, "Model"):
            yield n, "uses the reference Model"
        elif isinstance(n, ast.ImportFrom) and (n.level or any(a.name == "Model" for a in n.names)):
            yield n, f"imports from {'.' * n.level}{n.module or ''} (could reach the reference)"
    for node, dotted in src.imports:
        if re.search(r"(?i)problem|reference|kernelbench|kernelskill", dotted):
            yield node, f"imports {dotted} (could reach the reference)"


def output_caching(src: _Source) -> Findings:
    """What identifies an input rather than its shape: data_ptr(), id(), hash(), _version, storages,
    functools caches, weakref, torch.equal/allclose (content keys); storing a value computed in forward on
    self or in a global outside a CUDA-graph capture. Why: the timed loop would replay a stored answer.
    Caches keyed by shapes/dtypes (configs, compiled kernels, captured graphs) are fine."""
    for n in src.nodes:
        if isinstance(n, ast.Attribute) and (n.attr in _IDENTITY or (
                n.attr in ("equal", "allclose") and id(n) in src.called)):
            yield n, f"uses .{n.attr} (keys on an input's identity or contents, not its shape)"
        elif isinstance(n, ast.FunctionDef):
            for d in n.decorator_list:
                if _is_name(getattr(d, "func", d), "cache", "lru_cache", "cached_property"):
                    yield d, f"decorates {n.name} with a result cache"
    yield from src.builtins("id", "hash")
    yield from src.uses(_CACHES)
    yield from flow(src)[0]


def call_counting(src: _Source) -> Findings:
    """`global`/`nonlocal`, itertools.count; in forward and what it calls: `+=` on self or a global,
    `self.n = self.n + 1`, growing a stored container, next() on a stored iterator. Why: behaviour that
    depends on the call number can run the real kernel while checked and skip it while timed."""
    for n in src.nodes:
        if isinstance(n, (ast.Global, ast.Nonlocal)):
            yield n, f"declares {type(n).__name__.lower()} {', '.join(n.names)}"
    yield from src.uses(_prefixes("itertools.count"))
    yield from flow(src)[1]


def _is_f16_cast(node: ast.AST, operand: str | None = None) -> bool:
    """`X.to(tl.float16)` (with X's source text `operand` when given)."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "to"
            and len(node.args) == 1 and not node.keywords and ast.unparse(node.args[0]) == "tl.float16"
            and (operand is None or ast.unparse(node.func.value) == operand))


def _compensated_splits(src: _Source) -> set[int]:
    """ids of nodes where fp16 serves the error-compensated split of fp32 values, not a downgrade:
    every node of a Triton function whose whole body is
        hi = x.to(tl.float16); lo = (x - hi.to(tl.float32)).to(tl.float16); return hi, lo
    (x a parameter: lo keeps the bits hi drops, x = hi + lo + O(2^-22 |x|)), and, in files with such
    a function, the dtype= of torch.empty / empty_like allocations (buffers its parts are stored in).
    As with the TF32 triple (`_compensated_dots`), whether the parts are then combined into fp32-class
    results is the numeric fact the float64 comparison settles; this rule keeps plain fp16 casts out."""
    ok: set[int] = set()
    for f in src.jit:
        body = [st for st in f.body if not (isinstance(st, ast.Expr) and _is_str(st.value))]
        params = {a.arg for a in f.args.args}
        if len(body) != 3 or not all(isinstance(st, ast.Assign) and len(st.targets) == 1
                                     and isinstance(st.targets[0], ast.Name) for st in body[:2]):
            continue
        (h, hv), (lo, lv) = ((st.targets[0].id, st.value) for st in body[:2])
        x = ast.unparse(hv.func.value) if _is_f16_cast(hv) else None
        ret = body[2].value if isinstance(body[2], ast.Return) and body[2].value is not None else None
        if (x in params and _is_f16_cast(lv, f"{x} - {h}.to(tl.float32)") and h != lo != x
                and ret is not None and ast.unparse(ret) in (f"({h}, {lo})", f"{h}, {lo}")):
            ok |= {id(n) for n in ast.walk(f)}
    if ok:
        for n in src.nodes:
            if isinstance(n, ast.Call) and src.resolve(n.func) in ("torch.empty", "torch.empty_like"):
                ok |= {id(m) for k in n.keywords if k.arg == "dtype" for m in ast.walk(k.value)}
    return ok


def _low_precision(src: _Source) -> Findings:
    split = _compensated_splits(src)
    for n in src.nodes:
        if id(n) in split:
            continue
        if isinstance(n, ast.Attribute) and (n.attr in _LOW or n.attr.startswith("float8") or (
                n.attr == "half" and (id(n) in src.called or src.resolve(n) == "torch.half"))):
            yield n, f"uses {ast.unparse(n)}"
        elif _is_str(n) and (n.value in _LOW_STRINGS or n.value.startswith("float8")):
            yield n, f"names the low-precision type {n.value!r}"
    for node, dotted in src.refs:
        last = dotted.rsplit(".", 1)[-1]
        if id(node) in split:
            continue
        if _AMP.match(dotted) or last in _LOW or last == "half" or last.startswith("float8"):
            yield node, f"uses {dotted}"


# tl.dot(input, other, acc=None, input_precision=None, allow_tf32=None, ...): positions of its arguments.
_DOT_ARGS = ("input", "other", "acc", "input_precision", "allow_tf32")


def _dot_arg(call: ast.Call, name: str) -> ast.expr | None:
    """The tl.dot argument `name`, passed by position or keyword; None if absent."""
    i = _DOT_ARGS.index(name)
    if len(call.args) > i:
        return call.args[i]
    return next((k.value for k in call.keywords if k.arg == name), None)


def _dot_precision(call: ast.Call) -> Findings:
    prec, tf32 = _dot_arg(call, "input_precision"), _dot_arg(call, "allow_tf32")
    if any(k.arg is None for k in call.keywords):
        yield call, "tl.dot with **kwargs: its input_precision cannot be verified"
    elif prec is None and not _is_const(tf32, False):
        yield call, 'tl.dot without input_precision="ieee" or "tf32x3" runs one-pass TF32 on fp32 inputs'
    elif prec is not None and not _is_str(prec):
        yield call, "tl.dot input_precision is not a string literal, so it cannot be verified"
    elif prec is not None and prec.value not in ("ieee", "tf32x3"):
        yield call, f'tl.dot input_precision="{prec.value}" is below fp32 (use "ieee" or "tf32x3")'


def _dot_parts(call: ast.Call) -> tuple[str, str, str | None, str | None]:
    """(left, right, accumulator, input_precision) of a tl.dot call, as source text."""
    left, right, acc, prec = (_dot_arg(call, n) for n in _DOT_ARGS[:4])
    return (ast.unparse(left) if left is not None else "", ast.unparse(right) if right is not None else "",
            acc and ast.unparse(acc), prec.value if prec is not None and _is_str(prec) else None)


def _compensated_dots(src: _Source) -> set[int]:
    """ids of one-pass TF32 dots (or dots with no input_precision, which on the fp16 parts of
    `_compensated_splits` is exact products in fp32) that form the error-compensated triple of
    pre-split operands, three consecutive assignments in one function chained through their
    accumulator:
        p = tl.dot(x, y_lo, ...); p = tl.dot(x_lo, y, acc=p, ...); p = tl.dot(x, y, acc=p, ...)
    with x != x_lo and y != y_lo: x*y_lo + x_lo*y + x*y, fp32-class arithmetic under EVALUATION.md
    when x_lo, y_lo are the TF32 (or scaled fp16) residuals of x, y. Whether they are is a numeric fact the
    comparison against the float64 reference settles (a one-pass TF32 GEMM fails it by orders of
    magnitude); this rule only keeps a lone one-pass TF32 dot out."""
    ok: set[int] = set()
    for f in src.jit:
        assigns = [n for n in ast.walk(f) if isinstance(n, ast.Assign) and len(n.targets) == 1
                   and isinstance(n.value, ast.Call) and src.resolve(n.value.func) == "triton.language.dot"]
        dots = sorted(((n, _dot_parts(n.value)) for n in assigns), key=lambda d: d[0].lineno)
        dots = [(n, parts) for n, parts in dots if parts[3] in ("tf32", None)]
        for (d1, (x, yl, _, _)), (d2, (xl, y, acc2, _)), (d3, (x3, y3, acc3, _)) in zip(
                dots, dots[1:], dots[2:], strict=False):
            t1, t2 = ast.unparse(d1.targets[0]), ast.unparse(d2.targets[0])
            if acc2 == t1 and acc3 == t2 and (x3, y3) == (x, y) and x != xl and y != yl:
                ok |= {id(d1.value), id(d2.value), id(d3.value)}
    return ok


def precision_downgrade(src: _Source) -> Findings:
    """On an fp32 problem: fp16/bf16/fp8 types and casts, autocast, under every policy. Under `strict`
    also TF32: allow_tf32 = True, set_float32_matmul_precision other than "highest", tl.dot without
    input_precision "ieee"/"tf32x3" (Triton's fp32 default is one-pass TF32) unless it is part of the
    error-compensated triple on pre-split operands (`_compensated_dots`), `a @ b` in a Triton kernel
    (the same dot). Under `default` (TF32 cuDNN convolutions, as eager runs them) scoped cuDNN TF32
    (`torch.backends.cudnn.flags(allow_tf32=True)`) is legal; Triton dots stay fp32-accurate, since a
    dot cannot say whether it does a convolution's or a matmul's work, and eager's matmuls are IEEE.
    Under `tf32` everything but fp16/bf16. Why: lower precision is faster and must not be scored
    against a more accurate reference."""
    if not src.fp32_problem:
        return
    yield from _low_precision(src)
    if src.precision == "tf32":
        return
    relaxed = src.precision == "default"
    compensated = _compensated_dots(src)
    for n in src.nodes:
        if isinstance(n, ast.Call):
            dotted = src.resolve(n.func) or getattr(n.func, "attr", "")
            scoped_conv = relaxed and dotted.endswith("cudnn.flags")
            for k in n.keywords:
                if k.arg == "allow_tf32" and not _is_const(k.value, False) and not scoped_conv:
                    yield k, f"passes allow_tf32={ast.unparse(k.value)}"
            if dotted == "triton.language.dot" and id(n) not in compensated:
                yield from _dot_precision(n)
            elif dotted.endswith("set_float32_matmul_precision") and not _is_const(
                    (n.args or [None])[0], "highest"):
                yield n, f"calls {ast.unparse(n)} (TF32 matmuls)"
        elif isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None:
            for t in getattr(n, "targets", None) or [n.target]:
                name = getattr(t, "attr", getattr(t, "id", ""))
                if (name == "allow_tf32" and not _is_const(n.value, False)) or (
                        name == "fp32_precision" and not _is_const(n.value, "ieee")):
                    yield n, f"assigns {ast.unparse(t)} = {ast.unparse(n.value)} (TF32)"
        elif isinstance(n, ast.BinOp) and isinstance(n.op, ast.MatMult) and id(n) in src.in_jit:
            yield n, "`a @ b` in a Triton kernel is tl.dot at its default one-pass TF32 precision"


def introspection(src: _Source) -> Findings:
    """gc, inspect, ctypes, builtins, __main__, sys._getframe / sys.modules / settrace, torch._C, torch
    function/dispatch modes, global module hooks, frame and function internals (__globals__, f_back ...),
    globals()/vars()/locals(), getattr with a computed name on a module. Why: these find the reference
    model or the expected outputs in memory, or reach into the harness."""
    for node, dotted in src.refs:
        if _INTROSPECT.match(dotted) or dotted.rsplit(".", 1)[-1].startswith("register_module_"):
            yield node, f"uses {dotted}"
    for n in src.nodes:
        name = getattr(n, "attr", None) or getattr(n, "name", None) or (n.value if _is_str(n) else None)
        if name in _DUNDERS:
            yield n, f"uses {name}"
        elif (isinstance(n, ast.Call) and _is_name(n.func, "getattr", "hasattr", "setattr")
              and len(n.args) > 1 and not _is_const(n.args[1]) and src.resolve(n.args[0])):
            yield n, f"{n.func.id} with a computed name on {src.resolve(n.args[0])}"
    yield from src.builtins("globals", "vars", "locals", "__builtins__")


def dynamic_code(src: _Source) -> Findings:
    """exec, eval, builtin compile (torch.compile is fine), __import__, importlib, open(), pickle/marshal,
    network and file modules, star imports. Why: code or data the static checks cannot see."""
    yield from src.builtins("exec", "eval", "compile", "__import__", "open", "breakpoint")
    yield from src.uses(_DYNAMIC)
    for node, dotted in src.imports:
        if dotted.endswith(".*"):
            yield node, f"star import from {dotted[:-2]} hides which names are used"


def global_state(src: _Source) -> Findings:
    """Assigning attributes of imported modules (torch.backends.*, torch._dynamo.config, F.relu = ...),
    os.environ, default dtype/device, flush-denormal, determinism, matmul precision, seeds, torch.library.
    Why: the candidate shares its process with the eager and torch.compile baselines; a global change
    alters what they compute or how fast they run. Scoped torch.backends.cudnn.flags(...), reads: fine."""
    for node, dotted in src.patched():
        if not _TIMING.match(dotted):
            yield node, f"assigns {dotted}"
    yield from src.uses(_GLOBAL)


CHECKS: dict[str, Callable[[_Source], Findings]] = {f.__name__: f for f in (
    timer_patching, threads_or_processes, side_stream, fallback_to_reference, calls_reference, output_caching,
    call_counting, precision_downgrade, introspection, dynamic_code, global_state,
    A.import_allowlist, A.attribute_allowlist, A.reflection, A.decorator_allowlist)}


def problem_is_fp32(problem_source: str) -> bool:
    """True unless the problem source uses float16/half/bfloat16 (then low precision is the problem's own)."""
    try:
        return next(_low_precision(_Source(problem_source)), None) is None
    except SyntaxError:
        return re.search(r"\b(float16|bfloat16|half)\b", problem_source) is None


def run_static_checks(candidate_source: str, *, fp32_problem: bool = True, precision: str = "default"
                      ) -> list[StaticFailure]:
    """All failures, in source order; [] means the candidate passed every check. `precision` is the
    policy's name (eval/precision.py). A candidate that does not parse is not handled here (the
    caller reports syntax errors)."""
    return check_parsed(_Source(candidate_source, fp32_problem, precision))


def check_parsed(src: _Source) -> list[StaticFailure]:
    """run_static_checks on a candidate already parsed (the evaluator parses it once, for these
    checks and for its kernel pins)."""
    found: dict[tuple[str, int], StaticFailure] = {}  # one failure per check and line
    for name, check in CHECKS.items():
        for node, what in check(src):
            line = getattr(node, "lineno", 0)
            message = f"line {line}: {what} ({name.replace('_', ' ')})"
            found.setdefault((name, line), StaticFailure(name, line, message))
    order = list(CHECKS)
    return sorted(found.values(), key=lambda f: (f.line, order.index(f.check)))

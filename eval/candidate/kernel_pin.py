"""Triton runs the kernels the static checks read: sources pinned at check time, verified at compile.

Triton does not run a kernel's Python function: it compiles text. The compiled front end parses
`JITFunction._src` (or whatever `parse()` returns) into a tree and generates IR from it; the
interpreter (TRITON_INTERPRET=1) re-reads the source through `inspect`, rewrites its tree, then
compiles and executes it. Text or trees swapped after the checks (`k._src = ...`, `k.fn = f`, a
rewriter handed a string, `triton.jit` applied at run time) would run code nobody checked.

`pins(source)` names each function the candidate decorates with triton.* (jit, autotune, heuristics)
by the hash of its tree without decorators and positions (`ast.dump`): the form both front ends
parse. The judge forwards them in the `init` message (`kernel_pins`); where a message carries none,
the candidate process pins the source it is handed, before any of it runs. `install(pins)` wraps,
once per process, the points where Triton turns text into something that runs:
- compiled: CodeGenerator.visit_Module / visit_FunctionDef, where a kernel's (or a callee's) tree
  becomes IR, whatever produced the tree; it generates IR from a copy of the tree it verified;
- interpreted: FunctionRewriter._transform_ast (the text) and _compile_and_exec (only a tree that a
  verified text was transformed into is compiled and executed);
- the compiled path's argument binder, which Triton generates as Python from parameter names and
  annotation strings: names must be identifiers and annotations type names;
- IRSource (compiling IR text from a file): refused.
Triton's own library kernels (tl.sum, tl.cdiv...) are pinned from its installed sources. Checks
apply only inside the audit guard (audit.guarded()); a mismatch is audit.Violation('kernel_changed'),
recorded by the guard so that a candidate catching it is still rejected.
"""

from __future__ import annotations

import ast
import copy
import hashlib
import inspect
import keyword
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..static.source import _Source
from . import audit

CHECK = "kernel_changed"
# Triton's type names in annotations: fp32, *fp16, i64, u1, constexpr, *k fp32 (const pointers).
_TYPE_NAME = re.compile(r"\*?k?[A-Za-z0-9_]+")


# What ast.parse puts in a tree besides nodes and lists: a tree holding anything else (a str subclass
# whose repr lies, an object with a mutable state) was not parsed from text.
_LEAVES = frozenset({str, bytes, int, float, complex, bool, type(None), type(...)})


class _Alien(Exception):
    """The tree holds something ast.parse never makes."""


def _walk(node: Any, out: list[str], top: bool = False) -> Any:
    """A copy of `node` the candidate holds no reference to, and its serialization appended to
    `out`: type names, fields in order, list lengths and leaf reprs, positions left out (and a
    function's decorators, at the top). One pass does both: as a hash then a `copy.deepcopy` this
    took ~7 ms per kernel per compile, and Triton compiles a kernel once per autotuning
    configuration (+0.4-0.9 s of a multi-GEMM evaluation, H100, 2026-12-06,
    problems/measurements/h100-2026-12-06-tuning-picks/)."""
    kind = type(node)
    if kind in _LEAVES:
        out.append(repr(node))
        return node
    if kind is list:
        out.append(f"[{len(node)}")
        return [_walk(x, out) for x in node]
    if not (isinstance(node, ast.AST) and kind.__module__ == "ast"):
        raise _Alien(kind.__name__)
    out.append(kind.__name__)
    fields, new = vars(node), kind.__new__(kind)
    for name in kind._fields:
        value = fields.get(name)
        if top and name == "decorator_list":
            new.decorator_list = _walk(value, [])
            continue
        setattr(new, name, _walk(value, out))
    for name in kind._attributes:
        if name in fields:
            setattr(new, name, fields[name])
    return new


def _hash(out: list[str]) -> str:
    return hashlib.sha256("\x00".join(out).encode()).hexdigest()


def tree_hash(fn: ast.FunctionDef) -> str:
    """What a function means to Triton: its tree without decorators, positions or comments."""
    out: list[str] = []
    _walk(fn, out, top=True)
    return _hash(out)


def pins(source: str | _Source) -> list[str]:
    """The hashes of every function `source` decorates with triton.* (the static checks' `jit`);
    `source` may be the static checks' parse of it."""
    parsed = source if isinstance(source, _Source) else _Source(source)
    return sorted({tree_hash(f) for f in parsed.jit})


def _library_pins() -> set[str]:
    """Every `jit`-decorated function of Triton's own language package (tl.sum's combine, tl.softmax,
    tl.cdiv...): the only ones its code generator compiles from a tree. Its other decorated functions
    (builtins, members: hundreds) never reach it; leaving them out saves ~0.15 s per process."""
    import triton

    out: set[str] = set()
    for path in sorted((Path(triton.__file__).parent / "language").rglob("*.py")):
        text = path.read_text()
        if "jit" not in text:
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef) and any("jit" in ast.unparse(d)
                                                         for d in node.decorator_list):
                out.add(tree_hash(node))
    return out


class _Pins:
    """The pinned hashes of this process: the candidate's, then Triton's own once one is needed."""

    def __init__(self) -> None:
        self.candidate: set[str] = set()
        self.library: set[str] | None = None
        self.transformed: set[str] = set()  # interpreter trees made from verified text

    def known(self, h: str) -> bool:
        if h in self.candidate:
            return True
        if self.library is None:
            self.library = _library_pins()
        return h in self.library


_PINS = _Pins()
_installed: list[bool] = []


def _refuse(what: str) -> None:
    audit.flag(CHECK, f"{CHECK}: Triton was asked to compile {what}, not a kernel the static checks read")


def _pinned_function(f: Any, what: str) -> ast.FunctionDef:
    """A copy of `f`, a FunctionDef whose tree is pinned; refused otherwise."""
    out: list[str] = []
    try:
        copied = _walk(f, out, top=True) if type(f) is ast.FunctionDef else None
    except (_Alien, RecursionError):
        copied = None
    if copied is None or not _PINS.known(_hash(out)):
        _refuse(f"{what} {getattr(f, 'name', '?')!r}")
    return copied


def _verified_copy(node: Any, what: str) -> Any:
    """The tree Triton is about to generate IR from, verified and copied in one pass: a Module of
    pinned functions only, or one pinned function."""
    if type(node) is not ast.Module:
        return _pinned_function(node, what)
    if not node.body:
        _refuse(f"{what} an empty module")
    return ast.Module(body=[_pinned_function(f, what) for f in node.body], type_ignores=[])


def _verify_text(src: Any) -> None:
    try:
        tree = ast.parse(src) if type(src) is str else None
    except SyntaxError:
        tree = None  # Triton's own parse reports it
    if tree is not None:
        _verified_copy(tree, "the source of")
    elif type(src) is not str:
        _refuse("something other than source text")


def _wrap_codegen(cls: type) -> None:
    visit_module, visit_function = cls.visit_Module, cls.visit_FunctionDef

    def visit_Module(self: Any, node: Any) -> Any:  # noqa: N802 (Triton's visitor names)
        if audit.guarded():
            if type(node) is not ast.Module:
                _refuse("a tree it did not parse")
            node = _verified_copy(node, "the tree of")  # the candidate may hold the tree it handed over
        return visit_module(self, node)

    def visit_FunctionDef(self: Any, node: Any) -> Any:  # noqa: N802
        if audit.guarded():
            if type(node) is not ast.FunctionDef:
                _refuse("a tree it did not parse")
            node = _verified_copy(node, "the tree of")
        return visit_function(self, node)

    cls.visit_Module, cls.visit_FunctionDef = visit_Module, visit_FunctionDef


def _wrap_rewriter(cls: type) -> None:
    transform, compile_and_exec = cls._transform_ast, cls._compile_and_exec

    def _transform_ast(self: Any, src: Any) -> Any:
        if not audit.guarded():
            return transform(self, src)
        _verify_text(src)
        tree = transform(self, src)
        _PINS.transformed.add(hashlib.sha256(ast.dump(tree).encode()).hexdigest())
        return tree

    def _compile_and_exec(self: Any, tree: Any) -> Any:
        if audit.guarded():
            if type(tree) is not ast.Module or hashlib.sha256(
                    ast.dump(tree).encode()).hexdigest() not in _PINS.transformed:
                _refuse("a tree no checked source was transformed into")
            tree = copy.deepcopy(tree)
        return compile_and_exec(self, tree)

    cls._transform_ast, cls._compile_and_exec = _transform_ast, _compile_and_exec


def _snapshot_params(sig: Any, kparams: Iterable[Any]) -> tuple[inspect.Signature, list[Any]]:
    """The binder's inputs as plain values read once: the generated text is built from these."""
    params = list(sig.parameters.values())
    names = [p.name for p in params]
    if not all(type(n) is str and n.isidentifier() and not keyword.iskeyword(n) for n in names):
        _refuse("a kernel whose parameters are not identifiers")
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    plain = inspect.Signature([inspect.Parameter(n, kind, default=p.default)
                               for n, p in zip(names, params, strict=True)], __validate_parameters__=False)

    class _Param:  # the fields create_function_from_signature reads, frozen
        def __init__(self, kp: Any) -> None:
            self.is_constexpr = bool(kp.is_constexpr)
            self.is_const = bool(kp.is_const)
            self.do_not_specialize = bool(kp.do_not_specialize)
            self.do_not_specialize_on_alignment = bool(kp.do_not_specialize_on_alignment)
            ann = kp.annotation_type
            if ann and not (type(ann) is str and _TYPE_NAME.fullmatch(ann)):
                _refuse("a kernel whose annotation is not a Triton type name")
            self.annotation_type = ann if type(ann) is str else ""

    return plain, [_Param(kp) for kp in kparams]


def _wrap_binder(module: Any) -> None:
    make = module.create_function_from_signature

    def create_function_from_signature(sig: Any, kparams: Any, backend: Any) -> Callable[..., Any]:
        if audit.guarded():
            sig, kparams = _snapshot_params(sig, kparams)
        return make(sig, kparams, backend)

    module.create_function_from_signature = create_function_from_signature


def _wrap_ir_source(cls: type) -> None:
    init = cls.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:  # noqa: N807
        if audit.guarded():
            _refuse("IR text from a file")
        init(self, *args, **kwargs)

    cls.__init__ = __init__


def install(pinned: Iterable[str]) -> None:
    """Pin `pinned` (hashes from `pins`) in this process and wrap Triton's front ends (once)."""
    _PINS.candidate |= {h for h in pinned if type(h) is str}
    if _installed:
        return
    _installed.append(True)
    from triton.compiler import code_generator
    from triton.compiler.compiler import IRSource
    from triton.runtime import interpreter, jit

    _wrap_codegen(code_generator.CodeGenerator)
    _wrap_rewriter(interpreter.FunctionRewriter)
    _wrap_binder(jit)
    _wrap_ir_source(IRSource)

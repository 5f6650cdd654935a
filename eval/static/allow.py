"""The static allowlist: what a candidate may import, reach and decorate with; no reflective access.

Names (imports and every attribute chain that starts at one) are resolved against the REAL module
objects, which the evaluating process imports (torch, triton, numpy...), by this rule:
1. The root is one of ALLOWED_ROOTS: torch, triton, math, numpy and a few harmless stdlib modules.
2. The chain is walked segment by segment with inspect.getattr_static (no property and no module
   `__getattr__` runs here); a package's submodule not loaded yet is looked up by its spec, which
   imports only its (allowed) parents. Every segment whose value is a module must be listed in
   ALLOWED_MODULES: so `torch.serialization.os.system` stops at `os`, `torch.utils.cpp_extension`,
   `torch.hub`, `torch.ops`, `torch.library`, `numpy.ctypeslib`, `numpy.lib` and `triton.runtime`
   at themselves. Why a module rule: a module attribute is how code inside an allowed library hands
   out the OS (os, sys, subprocess) or the interpreter's internals to whoever asks.
3. A segment that starts with `_` is rejected, except PUBLIC_DUNDERS (`__version__`, `__init__`,
   `__call__`, `__name__`): private names are where interpreter and library internals live
   (torch._C, torch._dynamo, tl.core._semantic), and no kernel needs them.
4. Callables of allowed modules that read or write files, load code or look attributes up by string
   (DANGEROUS: torch.load, numpy.load, operator.attrgetter...) are rejected by identity, however
   they are reached.
A chain the library does not have is left to fail when it runs.

Reflective access is rejected wherever it appears (`reflection`): the attribute names in
FORBIDDEN_ATTRS (frames, code, globals, class walks), getattr & co. with a computed name (an
f-string with a literal public prefix on a non-imported object, `getattr(self, f"conv{i}")`, is
fine) or passed around as values, introspection builtins, three-argument type(), metaclasses,
`__del__` (work after forward returns), attribute writes on `type(x)`, format strings that read
private attributes. Decorators come from a short list or from the file's own functions.

Chains that leave the resolver: rule 2 sees only chains that start at an import. So a module may
only appear as the base of an attribute chain or as a plain alias (`F = torch.nn.functional`,
bound once): never as a value (in a list, an argument, a default, a class attribute, a return),
where the checks lose it (`[torch.cuda][0].os`); a name bound to a module may not be rebound to
anything else, or the resolver could follow the wrong binding. On objects the resolver does not
know (locals, call results, subscripts) the attribute names through which the standard library's
OS and interpreter modules are reached (GATEWAYS: os, sys, builtins, ctypes, importlib...) are
refused, in getattr and match patterns too. A module reaches such an object only through those
names, through a module-valued class or instance attribute (none in torch, triton or numpy but
pathlib's `pathmod` and a logging handler's `_builtin_open`, both listed) or through a call
that returns a module (`torch.get_device_module`: DANGEROUS).
"""

from __future__ import annotations

import ast
import builtins
import importlib
import importlib.util
import inspect
import re
import sys
import types
from functools import cache

from .source import Findings, _is_name, _is_str, _Source, _words

ALLOWED_ROOTS = frozenset(_words("torch triton math numpy typing dataclasses functools itertools collections "
                                  "operator enum __future__"))
# Exact module names, or every module under a name that ends in '.*'. Why each torch one: the
# computational namespaces (nn, linalg, fft, special, distributions), CUDA graphs / events / memory
# (no raw runtime handle: torch.cuda.cudart is DANGEROUS), read-only backend flags, autograd.Function.
ALLOWED_MODULES = frozenset(_words("""
    torch torch.nn torch.nn.* torch.functional torch.linalg torch.fft torch.special torch.return_types
    torch.types torch.random torch.nested torch.sparse torch.masked torch.func torch.testing torch.version
    torch.distributions torch.distributions.* torch.autograd torch.autograd.function torch.autograd.grad_mode
    torch.cuda torch.cuda.graphs torch.cuda.streams torch.cuda.random torch.cuda.memory torch.cuda.nvtx
    torch.cuda.amp torch.amp torch.cpu torch.backends torch.backends.cudnn torch.backends.cuda
    torch.backends.mkldnn torch.backends.cpu torch.backends.mps torch.backends.opt_einsum
    torch.utils torch.utils.checkpoint torch.utils.dlpack
    triton triton.language triton.language.*
    math numpy numpy.linalg numpy.fft numpy.random
    typing dataclasses functools itertools collections collections.abc operator enum __future__
    """))
# Under an allowed '.*' but still out: DataParallel's threads and process groups.
DENIED_MODULES = ("torch.nn.parallel",)
PUBLIC_DUNDERS = frozenset(("__version__", "__init__", "__call__", "__name__"))
DANGEROUS = _words("""
    torch.load torch.save torch.from_file torch.UntypedStorage.from_file torch.TypedStorage.from_file
    torch.cuda.cudart torch.cuda.CUDAPluggableAllocator torch.cuda.memory.change_current_allocator
    numpy.load numpy.save numpy.savez numpy.savez_compressed numpy.savetxt numpy.loadtxt numpy.genfromtxt
    numpy.fromfile numpy.fromregex numpy.memmap numpy.DataSource numpy.ndarray.tofile numpy.ndarray.dump
    numpy.ndarray.dumps operator.attrgetter operator.methodcaller typing.get_type_hints
    dataclasses.make_dataclass torch.PyTorchFileReader torch.PyTorchFileWriter torch.import_ir_module
    torch.import_ir_module_from_buffer torch.ScriptModuleSerializer torch.get_device_module
    torch.prepare_multiprocessing_environment triton.compile triton.language.str_to_ty
    """)
# Builtins that run code, open files or look names up by string: rejected by identity wherever an
# allowed module re-exports them (as names they are the `dynamic_code` / `reflection` checks' job).
DANGEROUS_BUILTINS = _words("exec eval compile open __import__ getattr setattr delattr vars globals locals "
                            "dir input breakpoint help exit quit")
# Attribute names under which a module of the standard library's OS or interpreter layer (os, sys,
# builtins, io, subprocess, importlib, ctypes, socket, threading, gc, inspect, pickle...) is kept by
# a module outside that layer, measured over everything torch, triton and numpy load
# (tests/eval/test_code_holes.py recomputes it), plus the two such class and instance attributes.
GATEWAYS = frozenset(_words("""
    __builtins__ _os _socket _sys _thread asyncio atexit bltns builtins concurrent ctypes gc glob importlib
    inspect io linecache mp multiprocessing os pathlib pickle python_multiprocessing reducer reduction shutil
    signal socket subprocess sys tarfile tempfile threading urllib zipfile zipimport posix marshal runpy
    pathmod _builtin_open
    """))
FORBIDDEN_ATTRS = frozenset(_words("""
    __subclasses__ __mro__ __bases__ __base__ mro __dict__ __class__ __globals__ __code__ __closure__
    __reduce__ __reduce_ex__ __getstate__ __setstate__ __builtins__ __self__ __func__ __wrapped__
    __defaults__ __kwdefaults__ __getattribute__ __setattr__ __delattr__ __traceback__ __loader__ __spec__
    __import__ __objclass__ __subclasshook__ __annotations__ tb_frame tb_next f_back f_globals f_locals
    f_code f_builtins gi_frame gi_code cr_frame cr_code ag_frame ag_code co_code co_consts
    """))
REFLECTIVE = frozenset(("getattr", "setattr", "delattr", "hasattr"))
INTROSPECTIVE_BUILTINS = ("dir", "help", "input", "exit", "quit", "__build_class__")
ALLOWED_DECORATORS = frozenset(_words("""
    triton.jit triton.autotune triton.heuristics triton.language.constexpr_function torch.no_grad
    torch.inference_mode torch.enable_grad torch.compile torch.autograd.function.once_differentiable
    functools.lru_cache functools.cache functools.cached_property functools.wraps dataclasses.dataclass
    enum.unique typing.final typing.overload
    """))
_FORMAT_PRIVATE = re.compile(r"\{[^{}!:]*[.\[]\s*_")
_FORBIDDEN_IN_TEXT = re.compile(r"\b(?:" + "|".join(sorted(a for a in FORBIDDEN_ATTRS if a.startswith("__")))
                                + r")(?!\w)")
_MISSING = object()


def _module_allowed(name: str) -> bool:
    if any(name == d or name.startswith(d + ".") for d in DENIED_MODULES):
        return False
    parts = name.split(".")
    return name in ALLOWED_MODULES or any(".".join(parts[:i]) + ".*" in ALLOWED_MODULES
                                          for i in range(1, len(parts)))


def _static_attr(obj: object, seg: str, full: str) -> object:
    """obj.seg without running code of obj's (properties, module __getattr__); a package's unloaded
    submodule as a bare placeholder module of that name; _MISSING when there is none."""
    if isinstance(obj, types.ModuleType):
        if seg in vars(obj):
            return vars(obj)[seg]
        if hasattr(obj, "__path__") and _module_allowed(obj.__name__):
            if full in sys.modules:
                return sys.modules[full]
            try:
                spec = importlib.util.find_spec(full)
            except (ImportError, ValueError):
                spec = None
            return types.ModuleType(full) if spec is not None else _MISSING
        return _MISSING
    try:
        return inspect.getattr_static(obj, seg)
    except AttributeError:
        return _MISSING


@cache
def _dangerous() -> frozenset[int]:
    ids = {id(getattr(builtins, name)) for name in DANGEROUS_BUILTINS if hasattr(builtins, name)}
    for dotted in DANGEROUS:
        obj = _walk(dotted)
        if obj is not _MISSING:
            ids.add(id(obj))
    return frozenset(ids)


@cache
def _walk(dotted: str) -> object:
    root, *rest = dotted.split(".")
    if root not in ALLOWED_ROOTS:
        return _MISSING  # never imported here: the import allowlist speaks for it
    try:
        obj: object = importlib.import_module(root)
    except ImportError:
        return _MISSING
    for i, seg in enumerate(rest, 1):
        obj = _static_attr(obj, seg, ".".join([root, *rest[:i]]))
        if obj is _MISSING:
            break
    return obj


@cache
def chain_problem(dotted: str) -> str | None:
    """Why the dotted name (an import or an attribute chain from one) leaves the allowlist, or None."""
    root, *rest = dotted.split(".")
    if root not in ALLOWED_ROOTS:
        return f"{root} is outside the allowed modules (torch, triton, math, numpy, typing helpers)"
    private = next((s for s in rest if s.startswith("_") and s not in PUBLIC_DUNDERS), None)
    if private:
        return f"{dotted} reaches the private name {private}"
    try:
        obj: object = importlib.import_module(root)
    except ImportError:
        return None  # numpy missing here: the candidate fails to import, which is its own verdict
    for i, seg in enumerate(rest, 1):
        full = ".".join([root, *rest[:i]])
        obj = _static_attr(obj, seg, full)
        if obj is _MISSING:
            return None
        if isinstance(obj, types.ModuleType) and not _module_allowed(obj.__name__):
            return f"{full} is the module {obj.__name__}, outside the allowed modules"
        if id(obj) in _dangerous():
            return f"{full} reads or writes files, loads code or looks names up by string"
    return None


# --- the checks -------------------------------------------------------------------------------------------


def import_allowlist(src: _Source) -> Findings:
    """Imports outside torch, triton, math, numpy, typing, dataclasses, functools, itertools, collections,
    operator, enum and their allowed submodules (os, sys, subprocess, ctypes, importlib, time, pickle...).
    Why: everything else reaches the OS, the interpreter or the evaluator."""
    for node, dotted in src.imports:
        if dotted.endswith(".*"):
            dotted = dotted[:-2]
        if why := chain_problem(dotted):
            yield node, f"imports {dotted}: {why}"


def attribute_allowlist(src: _Source) -> Findings:
    """Attribute chains from an import that leave the allowed modules (torch.serialization.os,
    torch.utils.cpp_extension.load_inline, torch.hub, torch.ops, torch._C, numpy.ctypeslib,
    triton.runtime), private names, file-IO and code-loading callables (torch.load, numpy.load).
    Why: a module attribute of an allowed library hands out what the import allowlist keeps out."""
    imports = {id(n) for n, _ in src.imports}
    for node, dotted in src.refs:
        if id(node) not in imports and (why := chain_problem(dotted)):
            yield node, f"uses {dotted}: {why}"
    yield from _module_values(src)
    yield from _gateways(src)


def _is_module(dotted: str | None) -> bool:
    return dotted is not None and isinstance(_walk(dotted), types.ModuleType)


def _module_values(src: _Source) -> Findings:
    """A module anywhere but as the base of a chain or a plain alias, and names bound to a module
    and also to something else (the resolver follows one binding per name)."""
    imports = {id(n) for n, _ in src.imports}
    for node, dotted in src.refs:
        if id(node) in imports or not isinstance(getattr(node, "ctx", ast.Load()), ast.Load):
            continue
        parent = src.parents.get(id(node))
        alias = isinstance(parent, ast.Assign) and parent.value is node and len(parent.targets) == 1 and \
            isinstance(parent.targets[0], ast.Name) and src.alias_of(parent.targets[0]) == dotted
        # getattr(tl, "float32") is a chain the resolver follows (a computed name is `reflection`'s)
        looked_up = isinstance(parent, ast.Call) and _is_name(parent.func, *REFLECTIVE) and \
            parent.args[:1] == [node]
        if _is_module(dotted) and not (alias or looked_up):
            yield node, (f"passes the module {dotted} around as a value, where the checks lose track of "
                         "what is reached through it")
    for name, sites in src.bindings.items():
        paths = {dotted for _, dotted in sites}
        if len(paths) > 1 and any(_is_module(p) for p in paths):
            for node, dotted in sites:
                yield node, (f"binds {name} to {dotted or 'something else'} here and to a module elsewhere: "
                             "the checks cannot tell which one a use reaches")


def _gateways(src: _Source) -> Findings:
    """Attribute names that reach the OS or interpreter modules (GATEWAYS), on any object."""
    for n in src.nodes:
        name = n.attr if isinstance(n, ast.Attribute) else None
        if isinstance(n, ast.Call) and _is_name(n.func, "getattr", "hasattr") and len(n.args) > 1 and \
                _is_str(n.args[1]):
            name = n.args[1].value
        if name in GATEWAYS:
            yield n, f"reads the attribute {name}, through which the OS or the interpreter is reached"
        elif isinstance(n, ast.MatchClass) and (bad := GATEWAYS.intersection(n.kwd_attrs)):
            yield n, f"match pattern reads {', '.join(sorted(bad))}"


def _literal_public_prefix(name: ast.AST) -> bool:
    """An f-string or concatenation whose text starts with a literal letter: `f"conv{i}"`, "w" + s.
    Such a name can be no dunder and no private name."""
    first = name.values[0] if isinstance(name, ast.JoinedStr) and name.values else (
        name.left if isinstance(name, ast.BinOp) and isinstance(name.op, ast.Add) else None)
    return _is_str(first) and first.value[:1].isalpha()


def _reflective_calls(src: _Source) -> Findings:
    called = src.called
    for n in src.nodes:
        if isinstance(n, ast.Name) and n.id in REFLECTIVE and n.id not in src.defined and id(n) not in called:
            yield n, f"passes {n.id} around as a value (a name lookup the checks cannot read)"
        elif isinstance(n, ast.Call) and _is_name(n.func, *REFLECTIVE) and n.func.id not in src.defined:
            name = n.args[1] if len(n.args) > 1 else None
            if name is None:
                yield n, f"{n.func.id} without an attribute name"
            elif _is_str(name):
                if name.value in FORBIDDEN_ATTRS:
                    yield n, f"{n.func.id}(..., {name.value!r}) reaches interpreter internals"
            elif not (_literal_public_prefix(name) and _is_name(n.args[0], *src.self_names)):
                # Only on the candidate's own instance (`getattr(self, f"conv{i}")`): elsewhere a
                # computed public name can still be `os` on an object the checks cannot see.
                yield n, f"{n.func.id} with a computed attribute name {ast.unparse(name)}"
        elif isinstance(n, ast.Call) and _is_name(n.func, "type") and "type" not in src.defined and (
                len(n.args) == 3 or n.keywords):
            yield n, "type() with three arguments builds a class at run time"


# What a Triton kernel object compiles from (compiled: `_src`, parse(); interpreted: fn, rewriter) and
# the caches that stand for it (hash, cache_key, binder): no candidate reads them.
_KERNEL_INTERNALS = frozenset(_words("src fn parse rewriter rewritten_fn hash cache_key params signature "
                                     "binder used_global_vals device_caches kernel_cache"))


def _kernel_internals(src: _Source) -> Findings:
    """A Triton kernel's attributes assigned (`k.fn = f`, setattr), its private ones (`k._src`,
    `k._unsafe_update_src`) or its front end (`k.src`, `k.rewriter`, `k.parse`) read: Triton compiles
    the text or tree the kernel object holds, not the source the checks read (eval/candidate/kernel_pin.py
    refuses
    a changed one when Triton compiles it)."""
    kernels = {f.name for f in src.jit}
    for n in src.nodes:
        if isinstance(n, ast.Attribute) and _is_name(n.value, *kernels):
            if not isinstance(n.ctx, ast.Load):
                yield n, f"assigns {ast.unparse(n)}, changing a kernel after the checks read it"
            elif n.attr.startswith("_") or n.attr in _KERNEL_INTERNALS:
                yield n, f"reads {ast.unparse(n)}, what Triton compiles the kernel from"
        elif isinstance(n, ast.Call) and _is_name(n.func, "setattr", "delattr") and n.args and \
                _is_name(n.args[0], *kernels):
            yield n, f"{n.func.id} on the kernel {n.args[0].id}"


def reflection(src: _Source) -> Findings:
    """Interpreter internals by attribute (__class__, __dict__, __globals__, __subclasses__, mro, f_back,
    tb_frame, gi_frame...), in match patterns and format strings too; getattr/setattr/delattr/hasattr
    with a computed name or used as values; dir/help/input/exit; type(a, b, c); metaclasses;
    `__del__`; attribute writes on type(x); a Triton kernel's internals read or replaced; defining or
    naming `__class__`, `__annotations__`. Why: these find the judge or the reference in memory, patch
    classes the evaluator uses, or run code the other checks cannot read."""
    for n in src.nodes:
        if isinstance(n, ast.Attribute) and n.attr in FORBIDDEN_ATTRS:
            yield n, f"uses .{n.attr} (interpreter internals)"
        elif isinstance(n, ast.MatchClass) and (bad := FORBIDDEN_ATTRS.intersection(n.kwd_attrs)):
            yield n, f"match pattern reads {', '.join(sorted(bad))}"
        elif _is_str(n) and (m := _FORBIDDEN_IN_TEXT.search(n.value) or _FORMAT_PRIVATE.search(n.value)):
            yield n, f"string names interpreter internals ({m.group(0).strip()})"
        elif isinstance(n, ast.ClassDef):
            if any(k.arg == "metaclass" for k in n.keywords):
                yield n, f"class {n.name} sets a metaclass"
            if any(_is_name(b, "type") for b in n.bases):
                yield n, f"class {n.name} subclasses type (a metaclass)"
        elif isinstance(n, ast.FunctionDef) and n.name == "__del__":
            yield n, "__del__ runs after forward returns, outside the timed region"
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name in FORBIDDEN_ATTRS:
            yield n, f"defines {n.name}, which lies to the evaluator about what an object is or holds"
        elif isinstance(n, ast.Name) and n.id in FORBIDDEN_ATTRS and n.id.startswith("__"):
            yield n, (f"uses the name {n.id} (interpreter internals: `__annotations__` is the text of a "
                      "dataclass's generated code, `__class__` the method's own class)")
    yield from _reflective_calls(src)
    yield from _kernel_internals(src)
    yield from src.builtins(*INTROSPECTIVE_BUILTINS)
    typed = {t.id for n in src.nodes if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call)
             and _is_name(n.value.func, "type") for t in n.targets if isinstance(t, ast.Name)}
    for n in src.nodes:
        if isinstance(n, ast.Attribute) and isinstance(n.ctx, (ast.Store, ast.Del)) and _is_name(
                n.value, *typed):
            yield n, f"assigns {ast.unparse(n)}, an attribute of a class taken from type(...)"


def decorator_allowlist(src: _Source) -> Findings:
    """Decorators other than triton.jit/autotune/heuristics, torch.no_grad/inference_mode/compile,
    staticmethod/classmethod/property (and its .setter), functools caches and wraps, dataclass and the
    file's own top-level functions. Why: a decorator runs at import with the decorated function in
    hand, and can replace it with anything."""
    own = {f.name for f in src.tree.body if isinstance(f, (ast.FunctionDef, ast.ClassDef))}
    for f in src.nodes:
        if not isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for d in f.decorator_list:
            target = d.func if isinstance(d, ast.Call) else d
            if _is_name(target, "staticmethod", "classmethod", "property", *own):
                continue
            if isinstance(target, ast.Attribute) and target.attr in ("setter", "getter", "deleter") and \
                    isinstance(target.value, ast.Name):
                continue
            if src.resolve(target) not in ALLOWED_DECORATORS:
                yield d, f"decorates {f.name} with {ast.unparse(target)}, not an allowed decorator"

"""The parsed candidate the static checks share: its import aliases resolved to dotted names.

Names resolve through imports and simple aliases (`import torch.cuda as c`, `s = torch.cuda`), so
`c.synchronize = f` reads as `torch.cuda.synchronize`. The name lists the checks match against
live here too, beside the helpers that walk the tree. Stdlib only.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property


@dataclass(frozen=True)
class StaticFailure:
    check: str  # the named check, a key of CHECKS
    line: int  # 1-based line in the candidate source (0 if not applicable)
    message: str  # one line a user can act on


Findings = Iterator[tuple[ast.AST, str]]


def _prefixes(names: str) -> re.Pattern[str]:
    """Matches a dotted name equal to or under one of `names`; '*' completes a component (os.spawn*)."""
    alternatives = "|".join(re.escape(n).replace(r"\*", r"\w*") for n in names.split())
    return re.compile(f"(?:{alternatives})(?:\\.|$)")


def _words(names: str) -> set[str]:
    return set(names.split())


_TIMING = _prefixes("torch.cuda torch.accelerator torch.Event torch.profiler torch.autograd.profiler "
                    "torch.utils.benchmark triton.testing time timeit")
_THREADS = _prefixes("threading _thread multiprocessing torch.multiprocessing concurrent subprocess asyncio "
                     "signal pty os.fork* os.spawn* os.system os.popen os.exec* os.posix_spawn* os.kill* "
                     "os.register_at_fork")
_STREAMS = _prefixes("torch.cuda.Stream torch.cuda.stream torch.cuda.set_stream torch.cuda.ExternalStream "
                     "torch.cuda.streams torch.cuda.StreamContext torch.Stream torch.accelerator.set_stream")
_CACHES = _prefixes("functools.lru_cache functools.cache functools.cached_property weakref torch.equal "
                    "torch.allclose")
_AMP = _prefixes("torch.autocast torch.amp torch.cuda.amp torch.cpu.amp torch.set_autocast*")
_INTROSPECT = _prefixes("gc inspect ctypes builtins __main__ sys._getframe sys._current_frames sys.modules "
                        "sys.settrace sys.setprofile sys.meta_path sys.path_hooks sys.addaudithook torch._C "
                        "torch.overrides torch.utils._python_dispatch")
_DYNAMIC = _prefixes("importlib pickle marshal shelve dill cloudpickle socket urllib requests http ftplib "
                     "runpy code codeop zipimport pathlib shutil glob tempfile io types.CodeType "
                     "types.FunctionType torch.load torch.hub torch.from_file torch.package torch.jit.load "
                     "numpy.load numpy.fromfile numpy.memmap os.open os.read os.listdir os.scandir os.walk")
_GLOBAL = _prefixes("torch.set_default_* torch.set_flush_denormal torch.use_deterministic_algorithms "
                    "torch.set_deterministic_debug_mode torch.set_float32_matmul_precision torch.manual_seed "
                    "torch.seed torch.set_rng_state torch.cuda.manual_seed* torch.cuda.set_rng_state* "
                    "random.seed numpy.random.seed os.environ os.getenv os.putenv os.unsetenv torch.library")
_LOW = _words("float16 bfloat16 HalfTensor BFloat16Tensor dot_scaled _scaled_mm")
_LOW_STRINGS = _words("float16 bfloat16 half fp16 bf16 fp8")
_DUNDERS = _words("__subclasses__ __globals__ __builtins__ __code__ __closure__ __dict__ __bases__ __mro__ "
                  "__torch_function__ __torch_dispatch__ f_back f_globals f_locals f_code tb_frame gi_frame")
_IDENTITY = _words("data_ptr _version _cdata untyped_storage storage __cuda_array_interface__")
_DICT_MUTATORS = _words("update setdefault pop popitem clear __setitem__ __delitem__")
_GROWERS = _words("append extend insert")  # a kept list that grows per call counts calls (not Tensor.add)
_MUTATORS = _DICT_MUTATORS | _GROWERS | {"remove", "copy_"}
_SETATTRS = {"__setattr__", "__delattr__"}
_GETTERS = {"get", "setdefault"}
_GRAPH = {"torch.cuda.graph", "torch.cuda.graphs.graph"}
_ALLOC = {f"torch.{f}" for f in _words("empty empty_like empty_strided zeros zeros_like ones ones_like full "
                                        "full_like arange cuda.CUDAGraph cuda.graph_pool_handle")}
_META = _words("shape dtype device ndim is_cuda layout requires_grad size stride dim numel nelement "
               "element_size is_contiguous get_device data_ptr storage_offset new_empty new_zeros new_ones "
               "new_full")
_COPIES = _words("clone detach contiguous to view reshape view_as reshape_as expand expand_as permute "
                 "transpose t flatten squeeze unsqueeze float cuda cpu narrow select split chunk unbind")


def _is_name(node: ast.AST, *ids: str) -> bool:
    return isinstance(node, ast.Name) and node.id in ids


def _is_const(node: ast.AST | None, *values: object) -> bool:
    """Is `node` a literal (equal to one of `values`, when given)?"""
    return isinstance(node, ast.Constant) and (not values or any(node.value == v for v in values))


def _is_str(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _root(node: ast.AST, through_get: bool = False) -> ast.AST:
    """`self` for self.a[k].b (and, with through_get, for self.cache.get(k))."""
    while True:
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        elif through_get and isinstance(node, ast.Call) and getattr(node.func, "attr", "") in _GETTERS:
            node = node.func.value
        else:
            return node


def _local_walk(node: ast.AST) -> Iterator[ast.AST]:
    """ast.walk that does not enter nested functions, lambdas or classes."""
    for child in ast.iter_child_nodes(node):
        yield child
        if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            yield from _local_walk(child)


def _args(f: ast.FunctionDef) -> list[ast.arg]:
    a = f.args
    return [*a.posonlyargs, *a.args, *a.kwonlyargs, *(x for x in (a.vararg, a.kwarg) if x)]


class _Source:
    """A parsed candidate with its import aliases resolved, shared by all checks."""

    def __init__(self, source: str, fp32_problem: bool = True, precision: str = "default"):
        self.tree = ast.parse(source)
        self.fp32_problem, self.precision = fp32_problem, precision
        self.nodes = list(ast.walk(self.tree))
        self.names: dict[str, str] = {}  # local name -> dotted path it was imported (or aliased) as
        self.imports: list[tuple[ast.AST, str]] = []
        for n in self.nodes:
            if isinstance(n, ast.Import):
                for a in n.names:  # `import torch.cuda` binds torch; `import torch.cuda as c` binds c
                    self.imports.append((n, a.name))
                    top = a.name.split(".")[0]
                    self.names[a.asname or top] = a.name if a.asname else top
            elif isinstance(n, ast.ImportFrom) and n.module:  # relative imports: calls_reference
                for a in n.names:
                    self.imports.append((n, f"{n.module}.{a.name}"))
                    self.names[a.asname or a.name] = f"{n.module}.{a.name}"
        for _ in range(3):  # `c = torch.cuda` makes `c.synchronize` resolve too
            for n in self.nodes:
                if isinstance(n, ast.Assign) and isinstance(t := n.targets[0], ast.Name) and (
                        dotted := self.resolve(n.value)):
                    self.names[t.id] = dotted
        inner = {id(n.value) for n in self.nodes if isinstance(n, ast.Attribute)}
        # Every import and every maximal name chain that resolves: what the candidate uses, as dotted names.
        chains = [n for n in self.nodes if isinstance(n, (ast.Name, ast.Attribute, ast.Call))
                  and id(n) not in inner]
        self.refs = self.imports + [(n, d) for n in chains if (d := self.resolve(n))]
        self.called = {id(n.func) for n in self.nodes if isinstance(n, ast.Call)}
        self.defined = set(self.names) | {  # names the candidate binds itself (its own `compile`, say)
            getattr(n, "id", None) or getattr(n, "name", None) or n.arg for n in self.nodes
            if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.arg))
            or (isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load))}
        self.jit = [f for f in self.nodes if isinstance(f, ast.FunctionDef) and any(
            (self.resolve(d.func if isinstance(d, ast.Call) else d) or "").startswith("triton.")
            for d in f.decorator_list)]
        self.in_jit = {id(n) for f in self.jit for n in ast.walk(f)}

    def resolve(self, node: ast.AST) -> str | None:
        """Dotted name of an imported object (`tl.dot` -> 'triton.language.dot'), else None."""
        if isinstance(node, ast.Name):
            return self.names.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            return f"{base}.{node.attr}" if base else None
        if isinstance(node, ast.Call) and _is_name(node.func, "getattr") and len(node.args) > 1 and _is_str(
                node.args[1]) and (base := self.resolve(node.args[0])):
            return f"{base}.{node.args[1].value}"
        return None

    def uses(self, pattern: re.Pattern[str]) -> Findings:
        for node, dotted in self.refs:
            if pattern.match(dotted):
                yield node, f"uses {dotted}"

    def builtins(self, *ids: str) -> Findings:
        """Uses of builtins `ids` that the candidate has not rebound."""
        for n in self.nodes:
            if isinstance(n, ast.Name) and n.id in ids and n.id not in self.defined:
                yield n, f"uses {n.id}"

    def patched(self) -> Findings:
        """Imported objects the candidate assigns, deletes, setattr()s or mutates, as dotted names."""
        for n in self.nodes:
            if isinstance(n, (ast.Attribute, ast.Subscript)) and isinstance(n.ctx, (ast.Store, ast.Del)):
                if isinstance(n, ast.Attribute) and (dotted := self.resolve(n)):
                    yield n, dotted
                elif isinstance(n, ast.Subscript) and (dotted := self.resolve(n.value)):
                    yield n, f"{dotted}[{ast.unparse(n.slice)}]"
            elif isinstance(n, ast.Call) and n.args:
                f, obj = n.func, None
                if _is_name(f, "setattr", "delattr") or getattr(f, "attr", "") in _SETATTRS:
                    obj = f.value if isinstance(f, ast.Attribute) and self.resolve(f.value) else n.args[0]
                elif isinstance(f, ast.Attribute) and f.attr in _DICT_MUTATORS:  # os.environ.update(...)
                    obj = f.value
                attr = next((f".{a.value}" for a in n.args if _is_str(a)), "")
                if obj is not None and (dotted := self.resolve(obj)):
                    yield n, dotted + attr

    @cached_property
    def parents(self) -> dict[int, ast.AST]:
        """id(node) -> the node that contains it."""
        return {id(c): n for n in self.nodes for c in ast.iter_child_nodes(n)}

    @cached_property
    def bindings(self) -> dict[str, list[tuple[ast.AST, str | None]]]:
        """Every place a name is bound, with the dotted path it is bound to (an import or a plain
        alias `x = torch.cuda`) or None (anything else: a parameter, a loop target, a def...)."""
        out: dict[str, list[tuple[ast.AST, str | None]]] = {}
        for n in self.nodes:
            if isinstance(n, ast.Import):
                for a in n.names:
                    top = a.name.split(".")[0]
                    out.setdefault(a.asname or top, []).append((n, a.name if a.asname else top))
            elif isinstance(n, ast.ImportFrom):
                for a in n.names:
                    dotted = f"{n.module}.{a.name}" if n.module else None
                    out.setdefault(a.asname or a.name, []).append((n, dotted))
            elif isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
                out.setdefault(n.id, []).append((n, self.alias_of(n)))
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.setdefault(n.name, []).append((n, None))
            elif isinstance(n, ast.arg):
                out.setdefault(n.arg, []).append((n, None))
            elif isinstance(n, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and n.name:
                out.setdefault(n.name, []).append((n, None))
            elif isinstance(n, ast.MatchMapping) and n.rest:
                out.setdefault(n.rest, []).append((n, None))
        return out

    def alias_of(self, target: ast.Name) -> str | None:
        """The dotted path `target` is bound to when it is the one target of `target = chain`
        outside a class body (a class attribute is an object's attribute, not an alias)."""
        assign = self.parents.get(id(target))
        if not (isinstance(assign, ast.Assign) and assign.targets == [target]):
            return None
        if isinstance(self.parents.get(id(assign)), ast.ClassDef):
            return None
        return self.resolve(assign.value)

    @cached_property
    def self_names(self) -> set[str]:
        """The first parameter of every method (`self`): the candidate's own instance."""
        return {f.args.args[0].arg for c in self.nodes if isinstance(c, ast.ClassDef) for f in c.body
                if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.args.args
                and not any(_is_name(d, "staticmethod") for d in f.decorator_list)}

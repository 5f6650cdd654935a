"""Loading problems and candidates (KernelBench format) with one-line errors for bad input.

A problem file defines `Model`, `get_inputs()` and `get_init_inputs()`, with its sizes in
module-level constants. A module-level dict literal `SMALL` maps some of those constants to
values that make the problem run in well under a second on a CPU; `size="small"` rewrites the
top-level assignments of those names before the file runs, so derived constants follow.

Modules are executed under a private name and never registered in `sys.modules`: a candidate
running in the same process cannot import the reference.
"""

from __future__ import annotations

import ast
import contextlib
import linecache
import types
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REQUIRED = ("Model", "get_inputs", "get_init_inputs")


class ProblemError(Exception):
    """The problem file itself is unusable (missing, malformed, broken). CLI exit code 2."""


class CandidateError(Exception):
    """The candidate cannot be loaded (syntax error, no ModelNew, import-time failure)."""


@dataclass
class LoadedProblem:
    name: str
    source: str  # as executed (SMALL applied when size == "small")
    size: str
    module: types.ModuleType

    @property
    def model_cls(self) -> type:
        return self.module.Model

    @property
    def get_inputs(self) -> Callable[[], list[Any]]:
        return self.module.get_inputs

    @property
    def get_init_inputs(self) -> Callable[[], list[Any]]:
        return self.module.get_init_inputs


def read_source(path: str | Path, what: str = "problem") -> str:
    p = Path(path)
    err = ProblemError if what == "problem" else CandidateError
    if not p.exists():
        raise err(f"{what} file not found: {p}")
    if p.is_dir():
        raise err(f"{what} path is a folder, expected a .py file: {p}")
    try:
        return p.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise err(f"cannot read {what} file {p}: {e}") from None


def _parse(source: str, filename: str, err: type[Exception]) -> ast.Module:
    try:
        return ast.parse(source, filename=filename)
    except SyntaxError as e:
        raise err(f"{filename}:{e.lineno}: syntax error: {e.msg}") from None


def check_problem_source(source: str, filename: str = "<problem>") -> ast.Module:
    """Static shape of a problem file: parses, and defines Model, get_inputs, get_init_inputs."""
    tree = _parse(source, filename, ProblemError)
    defined = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    defined |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets
                if isinstance(t, ast.Name)}
    missing = [name for name in REQUIRED if name not in defined]
    if missing:
        raise ProblemError(f"{filename}: not a KernelBench problem, it does not define "
                           f"{', '.join(missing)} (needs class Model, get_inputs(), get_init_inputs())")
    return tree


def small_overrides(tree: ast.Module, filename: str = "<problem>") -> dict[str, Any]:
    """The SMALL dict literal of a problem, or {} when it has none."""
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "SMALL"):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                raise ProblemError(f"{filename}:{node.lineno}: SMALL must be a dict literal of "
                                   "constants") from None
            if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
                raise ProblemError(f"{filename}:{node.lineno}: SMALL must map constant names to values")
            return value
    return {}


def apply_size(source: str, size: str, filename: str = "<problem>") -> str:
    """Return the source to execute: unchanged for 'full', SMALL applied for 'small'."""
    if size not in ("full", "small"):
        raise ProblemError(f"unknown size {size!r}: use 'small' or 'full'")
    tree = check_problem_source(source, filename)
    overrides = small_overrides(tree, filename)
    if size == "full" or not overrides:
        return source
    seen: set[str] = set()
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, ast.AnnAssign) else [])
        if len(targets) == 1 and isinstance(targets[0], ast.Name) and targets[0].id in overrides:
            name = targets[0].id
            node.value = ast.parse(repr(overrides[name]), mode="eval").body
            seen.add(name)
    unknown = sorted(set(overrides) - seen)
    if unknown:
        raise ProblemError(f"{filename}: SMALL names {', '.join(unknown)} but the file assigns no "
                           "such top-level constant (use one `NAME = value` line per constant)")
    return ast.unparse(ast.fix_missing_locations(tree))


def exec_module(source: str, filename: str, prefix: str,
                guard: contextlib.AbstractContextManager[Any] | None = None) -> types.ModuleType:
    """Execute source as a fresh module that is not in sys.modules (so nothing can import it).
    With `guard`, only the module body runs inside it: compiling is the evaluator's own work, and
    the audit hook lets exec run inside the guard nothing but code compiled under the candidate's
    file name (eval/candidate/audit.py)."""
    module = types.ModuleType(f"_{prefix}_{uuid.uuid4().hex[:8]}")
    module.__file__ = filename
    # Triton's @jit reads kernel source through inspect/linecache; a module executed from a
    # string has no file, so register its text under its name.
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    code = compile(source, filename, "exec")
    with guard or contextlib.nullcontext():
        exec(code, module.__dict__)
    return module


def load_problem(source: str, size: str = "full", filename: str = "<problem>") -> LoadedProblem:
    """Execute a problem (sizes applied) and check its three entry points are callable."""
    executed = apply_size(source, size, filename)
    try:
        module = exec_module(executed, filename, "problem")
    except Exception as e:  # a broken problem is a usage error, reported in one line
        raise ProblemError(f"{filename}: problem failed to import: {type(e).__name__}: {e}") from None
    for name in REQUIRED:
        if not callable(getattr(module, name, None)):
            raise ProblemError(f"{filename}: {name} is not callable")
    name = Path(filename).stem if filename and not filename.startswith("<") else "problem"
    return LoadedProblem(name=name, source=executed, size=size, module=module)


def load_candidate(source: str, filename: str = "<candidate>",
                   guard: contextlib.AbstractContextManager[Any] | None = None) -> types.ModuleType:
    """Execute a candidate and check it defines class ModelNew. With `guard` (the audit guard),
    everything that can run candidate code runs inside it: the module body, the lookup of ModelNew
    (a module `__getattr__` may answer) and the text of a failure (an exception's `__str__`); the
    CandidateError raised here then holds plain text only."""
    tree = _parse(source, filename, CandidateError)
    if not any(isinstance(n, ast.ClassDef) and n.name == "ModelNew" for n in tree.body) and not any(
            isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "ModelNew"
                                              for t in n.targets) for n in tree.body):
        raise CandidateError(f"{filename}: the candidate does not define class ModelNew")
    module, why = None, ""
    try:
        module = exec_module(source, filename, "candidate", guard)
    except Exception as e:  # formatted inside the guard: the exception is the candidate's object
        why = f"{filename}: candidate failed to import"
        with guard or contextlib.nullcontext(), contextlib.suppress(Exception):  # unprintable: a failure
            why = f"{filename}: candidate failed to import: {type(e).__name__}: {e}"
    if module is not None:
        with guard or contextlib.nullcontext():
            is_class = type(vars(module).get("ModelNew")) is type or isinstance(
                getattr(module, "ModelNew", None), type)
        why = "" if is_class else f"{filename}: ModelNew is not a class"
    if why or module is None:
        raise CandidateError(why)
    return module

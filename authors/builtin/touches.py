"""Does a candidate change one kernel of another, or how it is launched? A pure comparison of two
sources.

The kernel's part of a source is its top-level def (decorators included: @triton.autotune's
configurations are part of how it runs) plus the top-level functions that name it (its launchers:
a launch argument such as a tile size lives in the launcher's call). Generated names carry
counters (`_dwconv_kernel_6`, `_plans_9`) that shift when another region is added, so both sides
compare with those counters blanked. Module-level constants the launchers read are not compared.
"""

from __future__ import annotations

import ast
import re

# An underscore-led identifier (a generated name) and the `_<digits>` counters inside it:
# `_dwconv_kernel_6` -> `_dwconv_kernel_#`, `_dwconv_7_plans` -> `_dwconv_#_plans`.
_GENERATED = re.compile(r"\b_[A-Za-z]\w*")
_COUNTER = re.compile(r"(?<=[A-Za-z0-9])_\d+(?=_|$)")


def normalise(text: str) -> str:
    """`text` with the counters of generated identifiers replaced by '#'."""
    return _GENERATED.sub(lambda m: _COUNTER.sub("_#", m.group(0)), text)


def _top_functions(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


def _names(fn: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)}


def _part(functions: list[ast.FunctionDef | ast.AsyncFunctionDef], kernel: str) -> frozenset[str]:
    """The normalised sources of `kernel`'s def and of the functions that name it."""
    return frozenset(normalise(ast.unparse(f)) for f in functions if f.name == kernel or kernel in _names(f))


def touches(old_source: str, new_source: str, kernel: str) -> bool | None:
    """Whether `new_source` changes kernel `kernel` of `old_source` (its def, decorators included)
    or a top-level function that launches it: True also when the kernel is gone (replaced); None
    when `kernel` is not a top-level def of `old_source` (a vendor kernel) or a source does not
    parse. The kernel is found in `new_source` by its name with counters blanked; where several
    share that name, it is untouched if any of them keeps the old def and launchers."""
    try:
        old_fns = _top_functions(ast.parse(old_source))
        new_fns = _top_functions(ast.parse(new_source))
    except SyntaxError:
        return None
    if not any(f.name == kernel for f in old_fns):
        return None
    before = _part(old_fns, kernel)
    stem = normalise(kernel)
    return not any(_part(new_fns, f.name) == before for f in new_fns if normalise(f.name) == stem)

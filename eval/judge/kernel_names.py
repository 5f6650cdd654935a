"""Which Triton kernels a candidate defines, read from its source by the judge (stdlib only).

The candidate process reports the `@triton.jit` functions it saw launched (eval/candidate/kernels.py), but
that process runs the candidate's code, so its report is a claim. The judge holds the source and
never runs it: a function the source decorates with `triton.jit` (also under `triton.autotune` or
`triton.heuristics`, which wrap one), or hands to `triton.jit(f)`, is a kernel the candidate
defines. The result's kernel names are the reported launches that are such functions; plain
PyTorch that claims kernels has none.
"""

from __future__ import annotations

import ast

# Dotted names (after import aliases) that make a function a Triton kernel.
_KERNEL_DECORATORS = frozenset(("triton.jit", "triton.autotune", "triton.heuristics",
                                "triton.runtime.jit", "triton.runtime.jit.jit",
                                "triton.runtime.autotuner.autotune", "triton.runtime.autotuner.heuristics"))
_JIT = frozenset(("triton.jit", "triton.runtime.jit", "triton.runtime.jit.jit"))


def _aliases(tree: ast.AST) -> dict[str, str]:
    """Local name -> dotted path it was imported as (`import triton as tr`, `from triton import jit`)."""
    names: dict[str, str] = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            for a in n.names:
                names[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(n, ast.ImportFrom) and n.module and not n.level:
            for a in n.names:
                names[a.asname or a.name] = f"{n.module}.{a.name}"
    return names


def _dotted(node: ast.AST, names: dict[str, str]) -> str | None:
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value, names)
        return f"{base}.{node.attr}" if base else None
    return None


def _callee(node: ast.AST, names: dict[str, str]) -> str | None:
    """`triton.jit` for `triton.jit`, `triton.jit(...)` and `triton.jit(...)(...)`: what is applied."""
    while isinstance(node, ast.Call):
        node = node.func
    return _dotted(node, names)


def defined_kernels(source: str) -> set[str]:
    """Names of the Triton kernels `source` defines; empty when it does not parse."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names = _aliases(tree)
    found: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                _callee(d, names) in _KERNEL_DECORATORS for d in n.decorator_list):
            found.add(n.name)
        elif isinstance(n, ast.Call) and _callee(n.func, names) in _JIT and n.args and isinstance(
                n.args[0], ast.Name):  # k = triton.jit(f): the launched function is named f
            found.add(n.args[0].id)
    return found


def judged_kernels(reported: list[str], source: str) -> list[str]:
    """The kernels the result names: those the candidate process saw launched (its claim) that the
    source defines as Triton kernels (what the judge can see for itself)."""
    defined = defined_kernels(source)
    return sorted({k for k in reported if isinstance(k, str) and k in defined})

"""Assembling the candidate of a partially captured forward (frontend/partial.py): ModelNew is the
reference class (its helper methods too), its forward the reference's with each captured region
replaced by a guarded block: the region's kernels when its variables hold what they were built
for, its own statements otherwise."""

from __future__ import annotations

import ast
import textwrap
from typing import Any

from .emit import HEADER, _render_out, _strip_duplicate_imports, dedupe, region_lines, rename
from .frontend.capture import model_class_as
from .frontend.ir import PartialForward, Region, Segment, TensorMeta
from .runtime import GUARDS
from .templates.base import EmitContext, Emitted

Emission = tuple[list[Region], list["Emitted | None"]]


def guard_expr(guard: list[tuple[str, Any]]) -> str:
    """The condition under which a segment's kernels run (runtime/guards.py)."""
    parts = []
    for name, want in guard:
        if isinstance(want, TensorMeta):
            parts.append(f"_guard_fits({name}, {want.shape!r}, {want.stride!r}, {want.dtype})")
        elif want in (float, int):
            parts.append(f"_guard_{want.__name__}({name})")
        else:
            parts.append(f"_guard_is({name}, {want!r})")
    return " and ".join(parts) or "True"


def _segment_text(seg: Segment, lines: list[str]) -> str:
    out = _render_out(seg.program.outputs)
    if seg.returns:
        lines = [*lines, f"return {out}"]
    elif seg.assigns:
        lines = [*lines, f"({', '.join(seg.assigns)},) = {out}"]
    kernels = textwrap.indent("\n".join(lines or ["pass"]), "    ")
    fallback = textwrap.indent(seg.statements, "    ")
    return f"if {guard_expr(seg.guard)}:\n{kernels}\nelse:\n{fallback}"


def assemble_partial(problem_source: str, partial: PartialForward, preamble: str,
                     emissions: list[Emission], ctx: EmitContext, doc: str) -> str:
    kernels: list[str] = list(ctx.shared.values())
    helpers: list[str] = []
    blocks: list[list[str] | None] = []
    for regions, emitted in emissions:
        if all(em is None for em in emitted):
            blocks.append(None)  # nothing in our kernels: the statements as written, unguarded
            continue
        blocks.append(region_lines(regions, emitted, kernels, helpers))
    kernels, aliases = dedupe(kernels, {})
    helpers, aliases = dedupe(helpers, aliases)
    ctx.aliases.update(aliases)
    forward = partial.forward
    for i, (seg, lines) in enumerate(zip(partial.segments, blocks, strict=True)):
        text = seg.statements if lines is None else _segment_text(seg, [rename(ln, aliases) for ln in lines])
        forward = _replace_marker(forward, f"__segment_{i}__", text)
    constants = {k: v for seg in partial.segments for k, v in seg.program.constants.items()}
    cls = _model_new(problem_source, forward, constants)
    parts = [HEADER.format(doc=doc)]
    if preamble.strip():
        parts.append(_strip_duplicate_imports(preamble))
    if any(lines is not None for lines in blocks):
        parts.append(GUARDS)
    parts.extend([*kernels, *helpers, cls])
    source = "\n\n".join(p.strip("\n") for p in parts) + "\n"
    ast.parse(source)
    return source


def _replace_marker(text: str, marker: str, block: str) -> str:
    lines = text.split("\n")
    at = next(i for i, ln in enumerate(lines) if ln.strip() == marker)
    indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
    lines[at:at + 1] = textwrap.indent(block, indent).split("\n")
    return "\n".join(lines)


def _model_new(problem_source: str, forward: str, constants: dict[str, str]) -> str:
    """The reference class as ModelNew with `forward`, registering `constants` after its __init__
    (so seeding gives the reference's parameters)."""
    cls = ast.parse(model_class_as(problem_source, "ModelNew")).body[0]
    assert isinstance(cls, ast.ClassDef)
    fwd = ast.parse(forward).body[0]
    cls.body = [fwd if isinstance(n, ast.FunctionDef) and n.name == "forward" else n for n in cls.body]
    init = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
    if init is None and constants:
        init = ast.parse("def __init__(self):\n    super().__init__()").body[0]
        cls.body.insert(0, init)
    for name, expr in constants.items():
        assert isinstance(init, ast.FunctionDef)
        init.body.append(ast.parse(f"self.register_buffer({name!r}, {expr}, persistent=False)").body[0])
    return ast.unparse(ast.fix_missing_locations(cls))

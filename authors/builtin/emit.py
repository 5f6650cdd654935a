"""Assembling a standalone candidate file: imports, the problem's helper definitions, kernels,
launchers, and ModelNew (the reference's __init__ verbatim, a generated forward)."""

from __future__ import annotations

import ast
import re
import textwrap

from .frontend.ir import Program, Region, Value
from .templates.base import EmitContext, Emitted

HEADER = '''"""{doc}"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl
'''



def _render_out(out: object) -> str:
    if isinstance(out, Value):
        return out.name
    if isinstance(out, tuple):
        inner = ", ".join(_render_out(o) for o in out)
        return f"({inner},)" if len(out) == 1 else f"({inner})"
    if isinstance(out, list):
        return "[" + ", ".join(_render_out(o) for o in out) + "]"
    return repr(out)


def torch_lines(region: Region) -> list[str]:
    """The region's ops as plain PyTorch statements (the fallback for any region)."""
    return [op.attrs.get("statement") or f"{op.out.name} = {op.torch_expr}" for op in region.all_ops()]


def region_lines(regions: list[Region], emitted: list[Emitted | None], kernels: list[str],
                 helpers: list[str]) -> list[str]:
    """Forward lines of `regions` in order, each its emission's or, where none, its PyTorch;
    the emissions' kernels and helpers are appended to `kernels` and `helpers`."""
    body: list[str] = []
    for region, em in zip(regions, emitted, strict=True):
        if em is None:
            body.extend(torch_lines(region))
        else:
            kernels.extend(em.kernels)
            helpers.extend(em.helpers)
            body.extend(em.lines)
    return body


def assemble(program: Program, preamble: str, regions: list[Region], emitted: list[Emitted | None],
             ctx: EmitContext, doc: str) -> str:
    kernels: list[str] = list(ctx.shared.values())  # shared helpers first: kernels use them
    helpers: list[str] = []
    body = region_lines(regions, emitted, kernels, helpers)
    body.append(f"return {_render_out(program.outputs)}")
    # Repeated blocks (layers of a stack, branches of a block) emit identical kernels under fresh
    # names; one definition each compiles and autotunes once.
    kernels, aliases = dedupe(kernels, {})
    helpers, aliases = dedupe(helpers, aliases)
    body = [rename(line, aliases) for line in body]
    ctx.aliases.update(aliases)
    # Vendor convolutions run under the caller's flags, as the reference's do: the evaluator sets the
    # precision policy's flags for both sides.
    args = program.forward_signature or ", ".join(["self", *program.forward_args])
    fwd = f"    def forward({args}):\n" + textwrap.indent("\n".join(body), " " * 8)
    init = textwrap.indent(program.init_source, "    ") if program.init_source else \
        "    def __init__(self):\n        super().__init__()"
    # After every parameter the reference creates, so seeding still gives identical weights.
    init += "".join(f"\n        self.register_buffer({name!r}, {expr}, persistent=False)"
                    for name, expr in program.constants.items())
    parts = [HEADER.format(doc=doc)]
    if preamble.strip():
        parts.append(_strip_duplicate_imports(preamble))
    parts.extend(kernels)
    parts.extend(helpers)
    parts.append(f"class ModelNew(nn.Module):\n{init}\n\n{fwd}\n")
    source = "\n\n".join(p.strip("\n") for p in parts) + "\n"
    ast.parse(source)  # a template bug surfaces here, not in the evaluator
    return source


# What a definition names at top level: `def name(` or `name = ...` at the start of a line.
_TOP = re.compile(r"^(?:def (\w+)\(|(\w+) = )", re.M)
_WORD = re.compile(r"\b\w+\b")


def rename(text: str, aliases: dict[str, str]) -> str:
    """`text` with every identifier in `aliases` replaced by its target."""
    if not aliases:
        return text
    # One word pattern and a dict lookup: an alternation of every alias, compiled anew as the
    # aliases grow, made this quadratic (minutes for an unrolled 200-step loop).
    return _WORD.sub(lambda m: aliases.get(m.group(0), m.group(0)), text)


def dedupe(defs: list[str], aliases: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """Drop definitions identical to an earlier one but for the names they define at top level
    (their functions, and module-level assignments such as a launcher's plan cache), after applying
    `aliases`; returns the kept sources and the aliases, extended by dropped name -> kept name."""
    aliases = dict(aliases)
    kept: list[str] = []
    seen: dict[str, list[str]] = {}
    for src in defs:
        src = rename(src, aliases)
        names = [d or a for d, a in _TOP.findall(src)]
        if not names:
            kept.append(src)
            continue
        shape = rename(src, {n: f"<this{i}>" for i, n in enumerate(names)})
        if shape in seen:
            aliases.update(zip(names, seen[shape], strict=True))
        else:
            seen[shape] = names
            kept.append(src)
    return kept, aliases


_HEADER_IMPORTS = {"import math", "import torch", "import torch.nn as nn", "import torch.nn.functional as F",
                   "import triton", "import triton.language as tl"}


def _strip_duplicate_imports(preamble: str) -> str:
    lines = [ln for ln in preamble.splitlines() if ln.strip() not in _HEADER_IMPORTS]
    return "\n".join(lines)


def assemble_verbatim(problem_source: str, doc: str) -> str:
    """ModelNew as the reference class itself, renamed and otherwise unchanged (it runs under the
    caller's precision flags, as the user's module does): the candidate when the forward cannot be
    captured as a graph, and the kept solution when nothing beat eager. Correct by construction;
    whole-forward skills can wrap it."""
    from .frontend.capture import model_class_as, split_problem_source

    preamble = split_problem_source(problem_source)[0]
    cls_src = model_class_as(problem_source, "ModelNew")
    parts = [HEADER.format(doc=doc)]
    if preamble.strip():
        parts.append(_strip_duplicate_imports(preamble))
    parts.append(cls_src)
    source = "\n\n".join(p.strip("\n") for p in parts) + "\n"
    ast.parse(source)
    return source

"""Pull one standalone ModelNew source out of a chat reply.

Replies come in every shape: one fenced block; imports and kernels in one block and the class in
another; a usage example after the class; plain Python with no fences; prose around unfenced
code; a reasoning section before the answer; a reply cut off at the token limit.

A reply is unusable (ExtractionError, whose message is fed back to the model) when it has no
top-level `class ModelNew`, or was cut off before that class was complete. Code that defines
ModelNew but does not parse is still returned: it is a candidate with a compile error, which
the evaluator locates and the repairer fixes, with the attempt on record.
"""

from __future__ import annotations

import ast
import builtins
import re

from ..base import AuthorError

# An opening fence with an optional language tag, up to the closing fence or the end of the
# reply (a reply cut off at the token limit leaves the last fence open).
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([\w+-]*)[^\n]*\n(.*?)(?:^[ \t]*(\1)[ \t]*$|\Z)",
                    re.MULTILINE | re.DOTALL)
_PYTHON_TAGS = {"", "python", "py", "python3", "py3"}
_THINK = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL)
_CLASS = re.compile(r"^class\s+ModelNew\b", re.MULTILINE)
_CODE_START = re.compile(r"^(import \w|from [\w.]+ import |class \w|def \w|@\w|#!|\"\"\"|''')")
_BUILTINS = set(dir(builtins))
_CUT = "the reply was cut off at the token limit before `class ModelNew` was complete; write a shorter file"
# A line that starts a top-level statement (not a continuation, a comment or a dedented clause).
_TOP_LEVEL = re.compile(r"^(?![\s#)\]}]|(?:else|elif|except|finally|case)\b)\S")


class ExtractionError(AuthorError):
    """The reply holds no usable ModelNew (the message is fed back to the model)."""


def extract_code(reply: str, truncated: bool = False) -> str:
    """The ModelNew source in `reply`, or ExtractionError saying what was wrong with it.

    `truncated`: the reply stopped at the token limit, so code running to its very end (an
    unclosed fence, unfenced code) is cut off, even where what is left happens to parse."""
    text = _THINK.sub("", reply or "").strip()
    if not text:
        raise ExtractionError("the reply was empty")
    matches = [m for m in _FENCE.finditer(text) if m.group(2).lower() in _PYTHON_TAGS]
    if matches:
        return _from_blocks([(m.group(3), truncated and not m.group(4)) for m in matches])
    if not _CLASS.search(text):
        raise ExtractionError("the reply has no code block and no `class ModelNew`")
    return _from_unfenced(text, truncated)


def prose_of(reply: str, limit: int = 120) -> str:
    """The first sentence of the reply's words outside code (after the code when there are any
    there, as the system prompt asks): the candidate's one-line note."""
    text = _THINK.sub(" ", reply or "")
    fences = list(_FENCE.finditer(text))
    after = text[fences[-1].end():] if fences else ""
    text = after if after.strip() else _FENCE.sub(" ", text)
    if _CLASS.search(text):  # unfenced code: no prose worth keeping
        return ""
    words = " ".join(text.split())
    sentence = re.split(r"(?<=[.!?])\s", words, maxsplit=1)[0]
    return sentence if len(sentence) <= limit else sentence[:limit - 3] + "..."


def _from_blocks(blocks: list[tuple[str, bool]]) -> str:
    """`blocks`: (code, cut off) per Python block, in reply order."""
    owners = [i for i, (code, _) in enumerate(blocks) if _CLASS.search(code)]
    if not owners:
        raise ExtractionError("no code block defines `class ModelNew`")
    # The last ModelNew that parses is the answer: a model may revise itself within one reply,
    # or be cut off while writing a second version. If none parses, the last one is returned.
    unparsed: str | None = None
    for main in reversed(owners):
        code, cut = blocks[main]
        if cut:
            try:
                code = _complete_prefix(code)
            except ExtractionError:
                continue
        tree = _try_parse(code)
        if tree is None:
            unparsed = unparsed or code
            continue
        # Kernels or imports in separate blocks: join the blocks that define a name the class
        # block uses, in reply order; examples and earlier drafts define nothing it needs.
        missing = _free_names(tree)
        extra = [i for i, (b, c) in enumerate(blocks) if i not in owners and not c and missing & _defined(b)]
        if extra:
            code = "\n\n".join(blocks[i][0].strip("\n") if i != main else code.strip("\n")
                               for i in sorted([*extra, main]))
        return code.strip("\n") + "\n"
    if unparsed is None:
        raise ExtractionError(_CUT)
    return unparsed.strip("\n") + "\n"


def _from_unfenced(text: str, truncated: bool) -> str:
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if _CODE_START.match(ln)), 0)
    if truncated:
        lines = lines[:start] + _complete_prefix("\n".join(lines[start:])).splitlines()
    # Prose after the code does not parse: drop trailing top-level statements until the rest
    # does (never single lines, which could leave a parseable but truncated forward).
    ends = [len(lines)] + [i for i in range(len(lines) - 1, start, -1) if _TOP_LEVEL.match(lines[i])]
    for end in ends:
        code = "\n".join(lines[start:end]).strip("\n")
        if not _CLASS.search(code):
            break
        if _try_parse(code) is not None:
            return code + "\n"
    return "\n".join(lines[start:]).strip("\n") + "\n"


def _complete_prefix(code: str) -> str:
    """The cut-off `code` up to its last top-level statement, which is the one cut short; the
    ModelNew class must be complete before it."""
    lines = code.splitlines()
    cls = next(i for i, ln in enumerate(lines) if _CLASS.match(ln))
    starts = [i for i in range(cls + 1, len(lines)) if _TOP_LEVEL.match(lines[i])]
    if not starts:
        raise ExtractionError(_CUT)
    return "\n".join(lines[:starts[-1]])


def _try_parse(code: str) -> ast.Module | None:
    """The module if it parses and defines ModelNew at top level, else None."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    return tree if any(isinstance(n, ast.ClassDef) and n.name == "ModelNew" for n in tree.body) else None


def _defined(code: str) -> set[str]:
    """Top-level names a block binds (imports, functions, classes, assignments)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return set()
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


def _free_names(tree: ast.Module) -> set[str]:
    """Names the module reads but never binds anywhere (and that are not builtins)."""
    loaded = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    bound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(n.name)
        elif isinstance(n, ast.arg):
            bound.add(n.arg)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in n.names}
    return loaded - bound - _BUILTINS

"""Imports point down (README's Layout): cli/ over bench/ over graph/ over nodes/ over authors/ and
skill_index/, over state/ (whose records take the evaluator's result fields from eval/types.py) and
profiling/ (which stands on eval/), over eval/ (which imports nothing of ours). Inside eval/ the same
holds between its folders and root modules (eval/README.md's Layout), and no files anywhere import
each other in a circle. A module that imports a folder of its own rank or above fails here, with the
file and the import named; lazy imports inside functions and TYPE_CHECKING imports count too."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RANK = {"cli": 6, "bench": 5, "graph": 4, "nodes": 3, "authors": 2, "skill_index": 2, "state": 1,
        "profiling": 1, "eval": 0}


def imported_folders(path: Path, root: Path = ROOT) -> set[str]:
    """The top-level kernelskill folders `path` imports (absolute `kernelskill.X` or relative)."""
    pkg = list(path.relative_to(root).parts[:-1])
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("kernelskill.")}
        elif isinstance(node, ast.ImportFrom) and node.level:
            target = pkg[:len(pkg) - node.level + 1] + (node.module.split(".") if node.module else [])
            if target:
                found.add(target[0])
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("kernelskill."):
            found.add(node.module.split(".")[1])
    return found


def test_imports_point_down() -> None:
    upward = []
    for folder, rank in RANK.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            for other in sorted(imported_folders(path) - {folder}):
                if other in RANK and RANK[other] >= rank:
                    upward.append(f"{path.relative_to(ROOT)} imports {other}/")
    assert not upward, upward


def test_the_checker_sees_relative_absolute_and_lazy_imports(tmp_path: Path) -> None:
    fake = tmp_path / "nodes" / "sub" / "x.py"
    fake.parent.mkdir(parents=True)
    fake.write_text("from ...graph.build import build_graph\nimport kernelskill.cli.main\n"
                    "def f():\n    from ..runtime import config\n    from .y import z\n")
    assert imported_folders(fake, tmp_path) == {"graph", "cli", "nodes"}


# Inside eval/: the calls over the child processes over the judge over the candidate over timing, over
# the static checks and the sandbox, over the ground. A folder may import itself.
EVAL_RANK = {"api": 8, "reference_check": 8, "batch": 7, "child": 6, "judge": 5, "candidate": 4, "timing": 3,
             "static": 2, "sandbox": 2, "harness": 1, "types": 0, "problem": 0, "precision": 0}
# Owed by the split (issue 35) and paid by hand after it: empty, so no circle and no upward
# import passes. An entry here must still hold; the test names one that no longer does.
PENDING_UPWARD: set[str] = set()
PENDING_CIRCLES: set[tuple[str, ...]] = set()


def _ours(module: str | None) -> bool:
    return (module or "").startswith("kernelskill.")


def imported_modules(path: Path, root: Path = ROOT) -> set[str]:
    """The kernelskill files `path` imports, as paths from the root (a package: its __init__.py);
    `from PKG import name` counts PKG/name.py where that is a module."""
    pkg = list(path.relative_to(root).parts[:-1])
    found: set[str] = set()

    def add(parts: list[str]) -> None:
        for cand in (root.joinpath(*parts).with_suffix(".py"), root.joinpath(*parts, "__init__.py")):
            if parts and cand.is_file():
                found.add(cand.relative_to(root).as_posix())
                return

    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("kernelskill."):
                    add(a.name.split(".")[1:])
        elif isinstance(node, ast.ImportFrom) and (node.level or _ours(node.module)):
            module = node.module.split(".") if node.module else []
            base = pkg[:len(pkg) - node.level + 1] + module if node.level else module[1:]
            for a in node.names:
                sub = base + [a.name]
                if root.joinpath(*sub).with_suffix(".py").is_file() or root.joinpath(*sub).is_dir():
                    add(sub)
                else:
                    add(base)
    return found


def _eval_unit(rel: str) -> str | None:
    """'eval/judge/worker.py' -> 'judge'; 'eval/api.py' -> 'api'; eval/__init__.py -> None."""
    parts = rel.split("/")
    if parts[0] != "eval" or len(parts) < 2 or parts[1] == "__init__.py":
        return None
    return parts[1].removesuffix(".py")


def test_inside_eval_imports_point_down() -> None:
    upward, unranked = set(), set()
    for path in sorted((ROOT / "eval").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        unit = _eval_unit(rel)
        if unit is None:
            continue
        if unit not in EVAL_RANK:
            unranked.add(unit)
            continue
        for other in {_eval_unit(m) for m in imported_modules(path)} - {unit, None}:
            if EVAL_RANK.get(other, -1) >= EVAL_RANK[unit]:
                upward.add(f"{rel} imports {other}")
    assert not unranked, f"give them a place in EVAL_RANK and eval/README.md's Layout: {sorted(unranked)}"
    assert not upward - PENDING_UPWARD, sorted(upward - PENDING_UPWARD)
    assert not PENDING_UPWARD - upward, f"made: take off PENDING_UPWARD {sorted(PENDING_UPWARD - upward)}"


def circles(root: Path = ROOT, folders: Iterable[str] = RANK) -> set[tuple[str, ...]]:
    """Files of the package's folders that import each other in a loop (Tarjan's components)."""
    files = [p for folder in folders for p in sorted((root / folder).rglob("*.py"))]
    graph = {p.relative_to(root).as_posix(): imported_modules(p, root) for p in files}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: set[tuple[str, ...]] = set()

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.add(tuple(sorted(comp)))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_no_import_circle() -> None:
    found = circles()
    assert not found - PENDING_CIRCLES, sorted(found - PENDING_CIRCLES)
    assert not PENDING_CIRCLES - found, f"broken: take off PENDING_CIRCLES {sorted(PENDING_CIRCLES - found)}"


def test_the_module_checker_resolves_names_and_finds_circles(tmp_path: Path) -> None:
    for rel in ("pkg/__init__.py", "pkg/sub/__init__.py", "pkg/sub/a.py", "pkg/sub/b.py", "pkg/top.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    (tmp_path / "pkg/sub/a.py").write_text("from . import b\nfrom .. import top\nimport kernelskill.pkg\n")
    (tmp_path / "pkg/sub/b.py").write_text("def f():\n    from .a import x\n")
    assert imported_modules(tmp_path / "pkg/sub/a.py", tmp_path) == {"pkg/sub/b.py", "pkg/top.py",
                                                                      "pkg/__init__.py"}
    assert imported_modules(tmp_path / "pkg/sub/b.py", tmp_path) == {"pkg/sub/a.py"}
    assert circles(tmp_path, ["pkg"]) == {("pkg/sub/a.py", "pkg/sub/b.py")}

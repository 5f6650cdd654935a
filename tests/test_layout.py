"""Imports point down (README's Layout): cli/ over bench/ over graph/ over nodes/ over authors/ and
skill_index/, over state/ (whose records take the evaluator's result fields from eval/types.py),
over eval/ (which imports nothing of ours). A module that imports a folder of its own rank or
above fails here, with the file and the import named; lazy imports inside functions count too."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RANK = {"cli": 6, "bench": 5, "graph": 4, "nodes": 3, "authors": 2, "skill_index": 2, "state": 1, "eval": 0}


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

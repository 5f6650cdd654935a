"""pyproject's package list names every folder that is a package, so the wheel holds them all
(the repository root maps to `kernelskill`; a folder missing from the list installs nothing)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _skipped(parts: tuple[str, ...]) -> bool:
    """Tests, build output and hidden folders (.git, .venv, local scratch) ship nothing."""
    return parts[0] in ("tests", "build") or any(p.startswith(".") for p in parts)


def test_every_package_folder_is_in_the_wheel() -> None:
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    folders = {".".join(("kernelskill", *init.parent.relative_to(ROOT).parts))
               for init in ROOT.rglob("__init__.py")
               if not _skipped(init.relative_to(ROOT).parts)}
    assert folders == listed, (sorted(folders - listed), sorted(listed - folders))

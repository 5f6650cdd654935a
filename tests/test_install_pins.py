"""One Triton on install: README's first command, .ci/run and the dev extra pin the same triton
(and torch), so `pip install -e ".[dev]"` finds it installed instead of fetching the newest first."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _pins(text: str) -> dict[str, str]:
    return dict(re.findall(r"\b(torch|triton)==([\w.]+)", text))


def test_readme_ci_and_dev_extra_pin_one_triton() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    readme = next(ln for ln in lines if ln.startswith("python3 -m venv"))
    ci = "\n".join(ln for ln in (ROOT / ".ci/run").read_text().splitlines() if ln.startswith("pip install"))
    dev = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["dev"]
    dev_triton = next(re.match(r"triton==([\w.]+)", d).group(1) for d in dev if d.startswith("triton=="))
    first = readme.split('pip install -e ".[dev]"')[0]  # installed before the project resolves
    assert _pins(first).get("triton") == dev_triton, readme
    assert _pins(ci).get("triton") == dev_triton, ci
    assert _pins(first).get("torch") == _pins(ci).get("torch") is not None

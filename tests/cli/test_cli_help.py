"""`kernelskill --version`, and every command's --help: defaults shown and one example, as typed."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAIN = "import sys; from kernelskill.cli.main import main; sys.exit(main())"


def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", MAIN, *argv], capture_output=True, text=True, timeout=120)


def test_version_is_the_package_version() -> None:
    res = _cli("--version")
    want = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert res.returncode == 0 and res.stdout.strip() == f"kernelskill {want}", res


def _entries(help_text: str) -> list[str]:
    """The options section, one entry per option (its continuation lines joined)."""
    section = help_text.split("options:", 1)[1].split("\nexample:", 1)[0]
    entries: list[str] = []
    for line in section.splitlines():
        if re.match(r"^  -", line):
            entries.append(line.strip())
        elif line.strip() and entries:
            entries[-1] += " " + line.strip()
    return entries


@pytest.mark.parametrize("command", ["optimize", "eval", "profile", "graph", "bench", "wheelhouse",
                                     "skills", "skills search", "skills show"])
def test_help_shows_defaults_and_an_example(command: str) -> None:
    res = _cli(*command.split(), "--help")
    assert res.returncode == 0, res.stderr
    example = res.stdout.split("\nexample:\n", 1)
    first = example[-1].strip()
    assert len(example) == 2 and first.startswith(f"kernelskill {command.split()[0]}"), res.stdout
    for entry in _entries(res.stdout):
        # An option taking a value (`--rounds ROUNDS`, `-k K`) says its default; flags need none.
        if re.match(r"^-{1,2}[\w-]+ [A-Z{]", entry) and not entry.startswith("--help"):
            assert "default" in entry.lower(), f"{command}: {entry}"

"""Tracked text speaks to a user: no working-session numbers in prose, comments or folder names.

A rationale cites what a reader can open (a measurement folder, the script that made it, the GPU
and the date), never the internal run that produced it. This scans every file `git ls-files`
lists (binary files skipped) and every tracked path, and fails naming file:line for each hit.
The patterns are assembled from pieces so that this file does not match itself."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_WORD = "ses" + "sion"
# "<word> 12" or "<word>s 30-36", any case, the number possibly on the next line.
SESSION_NUMBER = re.compile(r"(?i)\b" + _WORD + r"s?\s+[0-9]")
# A folder tagged by its run: "h200-2026-12-03-s" + "36/" and the like.
TAGGED_FOLDER = re.compile("-" + r"s[0-9]+/" + "|measurements/[\\w.-]+-" + r"s[0-9]+\b")


def hits(text: str) -> list[tuple[int, str]]:
    """(line number, line) of every session number or session-tagged folder name in `text`."""
    found: dict[int, str] = {}
    lines = text.splitlines()
    for pattern in (SESSION_NUMBER, TAGGED_FOLDER):
        for m in pattern.finditer(text):
            n = text.count("\n", 0, m.start()) + 1
            found[n] = lines[n - 1].strip() if n <= len(lines) else ""
    return sorted(found.items())


def tracked_files() -> list[str]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        pytest.skip(f"git is not usable here ({e}); the scan needs a git checkout")
    if out.returncode != 0:
        pytest.skip("not a git checkout (git ls-files failed); the scan needs one")
    return [p for p in out.stdout.decode().split("\0") if p]


def test_no_session_numbers_in_tracked_text() -> None:
    bad: list[str] = []
    for rel in tracked_files():
        if TAGGED_FOLDER.search(rel + "/"):
            bad.append(f"{rel}: a session-tagged folder name")
        path = ROOT / rel
        if not path.is_file():
            continue  # deleted in the working tree, or a submodule
        data = path.read_bytes()
        if b"\0" in data[:8192]:
            continue  # binary (tarballs, images)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        bad += [f"{rel}:{n}: {line[:120]}" for n, line in hits(text)]
    assert not bad, ("session numbers in tracked files (cite the measurement folder instead):\n"
                     + "\n".join(bad))


def test_the_scan_flags_session_numbers_and_tagged_folders_only() -> None:
    assert [n for n, _ in hits(f"ok\nmeasured in {_WORD} 36 on an H200\n")] == [2]
    assert [n for n, _ in hits("(Sessions\n30-36)")] == [1]
    assert hits("problems/measurements/h200-2026-12-03-" + "s36/README.md")
    assert hits("see measurements/h200-2026-12-03-" + "s36 for the rows")
    assert not hits(f"the {_WORD}'s device time ran out; sessionId; issue 22; runs/bench-rerun/")
    assert not hits("problems/measurements/h200-2026-12-03-sandbox-overhead/ on 2026-12-03")

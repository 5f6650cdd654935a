"""What a user is handed: counted nouns ("1 round", "2 rounds") and files written whole or not at all."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def plural(n: int, noun: str, many: str | None = None) -> str:
    """'1 round', '0 rounds', '3 rounds'; `many` for an irregular plural."""
    return f"{n} {noun if n == 1 else many or noun + 's'}"


def write_atomic(path: Path, text: str) -> None:
    """Write `path` through a temporary file beside it and a rename: an interrupt or a crash
    leaves the old file or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would make a report unreadable to the user's group
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise

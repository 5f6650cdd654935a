"""Fixtures for the sandbox tests (test_sandbox*.py)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


@pytest.fixture
def sandbox_child_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """tests/eval on the child's PYTHONPATH, for `python -m sandbox_child`."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]))


@pytest.fixture
def shared_dir() -> Iterator[Callable[[], Path]]:
    """Makes folders the sandbox leaves visible and writable (/dev/shm, for CUDA), so that only
    the layer under test (the hidden paths) protects what the test puts there."""
    made: list[Path] = []

    def make() -> Path:
        made.append(Path(tempfile.mkdtemp(prefix="kernelskill-test-",
                                          dir="/dev/shm" if os.path.isdir("/dev/shm") else None)))
        return made[-1]

    yield make
    for d in made:
        shutil.rmtree(d, ignore_errors=True)

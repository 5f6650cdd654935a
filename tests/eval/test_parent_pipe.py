"""The judge's stdin (eval/judge/parent_pipe.py): lines read without a buffer, so the wait for the
pipe's end still sees what follows them; the wait ends at the close or at its cap."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator

import pytest
from kernelskill.eval.judge import parent_pipe as PP


@pytest.fixture
def pipe(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[int, int]]:
    monkeypatch.setattr(PP, "_attached", [])
    r, w = os.pipe()
    yield r, w
    for fd in (r, w):
        with contextlib.suppress(OSError):  # closed by the test
            os.close(fd)


def test_a_line_is_read_alone_and_the_close_after_it_is_still_seen(pipe: tuple[int, int]) -> None:
    r, w = pipe
    os.write(w, b"key\ngo\n")
    os.close(w)  # everything, the end included, is there before the first read
    assert PP.read_line(r) == "key\n"
    assert PP.read_line(r) == "go\n"
    t0 = time.monotonic()
    assert PP.wait_closed(cap_s=5.0) is True
    assert time.monotonic() - t0 < 1.0


def test_the_wait_lasts_until_the_parent_closes(pipe: tuple[int, int]) -> None:
    r, w = pipe
    os.write(w, b"key\n")
    PP.read_line(r)
    closer = threading.Timer(0.6, os.close, (w,))
    closer.start()
    t0 = time.monotonic()
    assert PP.wait_closed(cap_s=10.0) is True
    assert 0.5 <= time.monotonic() - t0 < 5.0
    closer.join()


def test_the_wait_gives_up_at_its_cap_while_the_pipe_stays_open(pipe: tuple[int, int]) -> None:
    r, w = pipe
    os.write(w, b"key\n")
    PP.read_line(r)
    os.write(w, b"unexpected")  # bytes instead of the end are dropped, not taken for it
    t0 = time.monotonic()
    assert PP.wait_closed(cap_s=0.5) is False
    assert time.monotonic() - t0 >= 0.45


def test_a_judge_without_a_parent_pipe_does_not_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(PP, "_attached", [])  # a worker run in a test's own process read no line
    t0 = time.monotonic()
    assert PP.wait_closed(cap_s=5.0) is True
    assert time.monotonic() - t0 < 0.1

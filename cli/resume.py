"""Resuming a command-line run with the options it was started with.

Every option of `kernelskill optimize` is kept in the thread's RunSettings (checkpointed with
it), so `--thread ID` alone resumes the run as it was started, out folder included. An option
given again with the same value is accepted; a changed one is refused in one line, never
silently dropped: the checkpointed graph already ran under the old value, so applying a new one
half-way would leave a report that describes neither.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..state.graph_state import RunSettings
from ..state.records import Problem

# RunSettings field -> the option that sets it, for the refusal line.
_FLAGS = {"author": "--author", "model": "--model", "base_url": "--base-url", "device": "--device",
          "size": "--size", "rounds": "--rounds", "precision": "--precision", "out": "--out",
          "config": "--config"}


def absolute(path: str | None) -> str | None:
    return None if path is None else str(Path(path).resolve())


def requested(args: argparse.Namespace, precision: str | None, file_run: dict[str, Any]) -> dict[str, Any]:
    """The settings this command line asks for explicitly: its options, and the `run` values a
    given configuration file sets (`file_run`)."""
    req = {k: v for k, v in file_run.items() if k in RunSettings.model_fields}
    cli = {"author": args.author, "model": args.model, "base_url": args.base_url, "device": args.device,
           "size": args.size, "rounds": args.rounds, "precision": precision,
           "out": absolute(args.out), "config": absolute(args.config)}
    req.update({k: v for k, v in cli.items() if v is not None})
    return req


def changed(stored: RunSettings, req: dict[str, Any]) -> list[str]:
    """'--rounds 2 (asked 3)' for each requested value that differs from the stored one."""
    out = []
    for key, value in req.items():
        old = getattr(stored, key)
        if old != value:
            flag = _FLAGS.get(key, f"run.{key}")
            out.append(f"{flag} {old if old is not None else '(none)'} (asked {value})")
    return out


def refusal(thread: str, stored: RunSettings, req: dict[str, Any]) -> str | None:
    """One line refusing the resume, or None when nothing requested differs."""
    diffs = changed(stored, req)
    if not diffs:
        return None
    return (f"thread {thread} was started with {', '.join(diffs)}; resume it with `--thread {thread}` "
            "alone (its options are kept) or start a new thread")


def problem_mismatch(thread: str, stored: Problem, source: str) -> str | None:
    if stored.source == source:
        return None
    return (f"thread {thread} optimizes {stored.path}, whose text differs from this problem file; "
            "give the same file or start a new thread")

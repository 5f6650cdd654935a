"""Author tests judge hundreds of candidates in-process on the CPU: their candidate processes come from
a fork server that imported torch and Triton once per test worker (candidate_zygote.py), not from
a fresh interpreter each (~2 s of CPU apiece on the 2-core CI machine). Set
KS_TEST_FRESH_CANDIDATES=1 to start each one as the product does."""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from candidate_zygote import Zygote
from kernelskill.eval.judge import link as judge_link


@pytest.fixture(scope="session", autouse=True)
def candidate_fork_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Zygote | None]:
    if os.environ.get("KS_TEST_FRESH_CANDIDATES") == "1":
        yield None
        return
    scratch = tmp_path_factory.mktemp("candidate-zygote")
    try:
        zygote = Zygote(judge_link.candidate_env("cpu", scratch), scratch)
    except (OSError, RuntimeError) as e:  # slower, not wrong: every candidate starts afresh
        warnings.warn(f"candidate fork server unavailable ({e}); starting each candidate afresh",
                      stacklevel=1)
        yield None
        return
    real = judge_link.spawn_candidate

    def spawn(sock, scratch: Path, device: str, log: Path, args=(), role="candidate"):  # noqa: ANN001, ANN202 - spawn_candidate's
        if device != "cpu" or zygote.dead or args:  # the forked child runs main() without arguments
            return real(sock, scratch, device, log, args, role)
        return zygote.spawn(judge_link.candidate_env(device, scratch), sock, scratch, log)

    judge_link.spawn_candidate = spawn
    try:
        yield zygote
    finally:
        judge_link.spawn_candidate = real
        zygote.close()

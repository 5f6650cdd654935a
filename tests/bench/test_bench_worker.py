"""A bench worker on a GPU keeps one spare judge across its problems, so each problem's first
evaluation (the one that times the baselines) finds a judge already started."""

from __future__ import annotations

from typing import Any

import pytest
from kernelskill.bench.worker import keep_spare_judges
from kernelskill.eval import child as C


class _FakeJudge:
    def __init__(self) -> None:
        self.discarded = self.freed = False

    def discard(self) -> None:
        self.discarded = True

    def free(self) -> None:
        self.freed = True


def _setup(device: str, server: str | None = None) -> dict[str, Any]:
    return {"settings": {"device": device}, "server": server}


def test_a_spare_started_in_one_problem_outlives_that_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _FakeJudge()
    monkeypatch.setattr(C, "_start", lambda *a: fake)
    with keep_spare_judges(_setup("cuda")):
        with C.spare_judges():  # one problem's graph run: its last evaluation leaves a spare
            C._SPARES.refill(C.JUDGE, "cuda", 300.0, False, held=True)  # as that evaluation starts
            C._SPARES.free()  # and once it is over
        assert C._SPARES.child is fake and fake.freed and not fake.discarded  # there for the next problem
    assert fake.discarded and C._SPARES.child is None and C._SPARES.depth == 0


@pytest.mark.parametrize("setup", [_setup("cpu"), _setup("cuda", server="http://127.0.0.1:1")])
def test_no_spare_kept_on_the_cpu_or_for_a_server(setup: dict[str, Any]) -> None:
    with keep_spare_judges(setup):
        assert C._SPARES.depth == 0

"""A bench problem whose reference cannot run is that row's error, found before any candidate."""

from __future__ import annotations

from pathlib import Path

import pytest
from kernelskill.bench.worker import make_runner
from kernelskill.state.config import KernelSkillConfig
from kernelskill.state.graph_state import RunSettings

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_a_broken_reference_fails_its_bench_row_first(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    problem = tmp_path / "broken.py"
    problem.write_text((FIXTURES / "broken_reference.py").read_text())
    settings = RunSettings(device="cpu", size="small", author="scripted", script=[], rounds=1)
    run_task = make_runner({"config": KernelSkillConfig().model_dump(mode="json"),
                            "settings": settings.model_dump()})
    out = tmp_path / "row"
    task = {"out": str(out), "path": str(problem), "name": "broken", "thread_id": "bench-broken"}
    with pytest.raises(RuntimeError, match=r"broken\.py: .*failed: RuntimeError: mat1 and mat2"):
        run_task(task, lambda _: None)
    assert not (out / "threads.sqlite").exists()  # no thread was started for it

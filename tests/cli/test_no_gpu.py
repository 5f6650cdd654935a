"""`--device cuda` on a machine without a GPU: one line and exit 2, before any work."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import torch
from kernelskill.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("command", ["eval", "profile", "optimize"])
def test_cuda_without_a_gpu_is_one_line_before_any_work(command: str, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Checked first: no judge started, no static-check verdict in front of it."""
    if torch.cuda.is_available():
        pytest.skip("a GPU is visible here")
    problem = ROOT / "problems" / "level1" / "11_gelu.py"
    bad = tmp_path / "cand.py"
    bad.write_text("import os\nos.system('true')\n")  # would fail the static checks
    args = [command, str(problem), *([str(bad)] if command == "eval" else []), "--device", "cuda"]
    t0 = time.time()
    assert main(args) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and "no GPU is visible" in err[0] and "--device cpu" in err[0], err
    assert time.time() - t0 < 5

"""`kernelskill eval --sandbox-report`: one line per sandbox layer, exit 0, no files needed."""

from __future__ import annotations

import pytest
from kernelskill.cli.main import main
from kernelskill.eval.sandbox.report import report


def test_sandbox_report_prints_each_layer_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--sandbox-report"]) == 0
    assert capsys.readouterr().out.splitlines() == report()


def test_eval_without_files_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval"]) == 2
    assert "needs a PROBLEM and a CANDIDATE" in capsys.readouterr().err


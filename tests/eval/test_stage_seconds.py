"""An evaluation says where its wall time went: static checks, each judge stage, and the judge's
start and end outside its own clock (issue 22's cost bound is read off these, per problem)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from kernelskill.eval.api import evaluate
from kernelskill.eval.types import EvalOptions

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
sys.path.insert(0, str(FIXTURES))
from candidates import good  # noqa: E402


def test_stage_seconds_account_for_the_evaluation() -> None:
    opts = EvalOptions(device="cpu", size="small", trials=2, timeout_s=120, baselines=True)
    t0 = time.time()
    r = evaluate((FIXTURES / "relu_scale.py").read_text(), good(), opts)
    wall = time.time() - t0
    assert r.correct, r.reason
    s = r.stage_seconds
    assert {"static", "load", "compile", "correctness", "timing", "processes"} <= set(s), s
    assert all(v >= 0 for v in s.values()) and s["processes"] > 0, s
    judged = sum(s[k] for k in ("load", "compile", "correctness", "timing"))
    assert judged <= r.elapsed_s + 0.05, (judged, r.elapsed_s)
    # What is accounted for is the evaluation's wall time, less only the parent's own bookkeeping.
    assert wall - 2.0 < judged + s["processes"] + s["static"] <= wall + 0.05, (s, wall)


def test_a_static_rejection_reports_its_static_seconds() -> None:
    src = good().replace("import torch\n", "import torch\nimport subprocess\n", 1)
    r = evaluate((FIXTURES / "relu_scale.py").read_text(), src,
                 EvalOptions(device="cpu", size="small", timeout_s=60))
    assert r.stage == "static" and set(r.stage_seconds) == {"static"}, (r.stage, r.stage_seconds)

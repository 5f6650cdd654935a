"""`--precision` on the commands a user types: one policy named, stored and printed; contradictions
are one-line usage errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from kernelskill.cli.main import main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PROBLEM = FIXTURES / "relu_scale.py"
sys.path.insert(0, str(FIXTURES))
from candidates import good  # noqa: E402


@pytest.mark.parametrize("command", ["eval", "optimize", "bench", "profile"])
def test_allow_tf32_and_another_policy_is_a_one_line_usage_error(
        command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = {"eval": [str(PROBLEM), str(PROBLEM)], "optimize": [str(PROBLEM)], "bench": [str(PROBLEM)],
            "profile": [str(PROBLEM)]}[command]
    extra = ["--out", str(tmp_path / "o")] if command in ("optimize", "bench") else []
    assert main([command, *args, "--device", "cpu", "--precision", "strict", "--allow-tf32", *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert "--allow-tf32 means --precision tf32, not strict" in err and "\n" not in err
    assert not (tmp_path / "o").exists()


def test_eval_prints_the_policy_and_its_flags(tmp_path: Path) -> None:
    cand = tmp_path / "cand.py"
    cand.write_text(good(1024))
    r = subprocess.run([sys.executable, "-m", "kernelskill.cli", "eval", str(PROBLEM), str(cand),
                        "--device", "cpu", "--no-baselines", "--trials", "1", "--precision", "strict"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "precision policy: strict (cuda.matmul.allow_tf32=False, cudnn.allow_tf32=False" in r.stdout
    assert "strict precision" in r.stderr


def test_bench_stores_the_policy_and_resume_refuses_another(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "o"
    out.mkdir()
    (out / "bench.json").write_text(json.dumps({"paths": [str(PROBLEM)], "device": "cpu", "size": "small",
                                                "author": "builtin", "rounds": 1, "precision": "strict"}))
    (out / "results.jsonl").write_text("")
    assert main(["bench", "--resume", "--out", str(out), "--precision", "tf32"]) == 2
    assert "benched with precision=strict, not tf32" in capsys.readouterr().err
    # A bench folder from before the three policies: allow_tf32 stored, read as its policy.
    (out / "bench.json").write_text(json.dumps({"paths": [str(PROBLEM)], "device": "cpu", "size": "small",
                                                "author": "builtin", "rounds": 1, "allow_tf32": True}))
    assert main(["bench", "--resume", "--out", str(out), "--allow-tf32", "--filter", "zz*"]) == 2
    assert "matches none" in capsys.readouterr().err  # --allow-tf32 agreed with the stored tf32

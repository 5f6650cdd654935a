"""`kernelskill optimize` as a user types it: Ctrl-C, the printed resume command, resume with the
thread's own options (out folder included), a changed option refused, a broken reference refused
before anything is written."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROBLEM = ROOT / "tests" / "fixtures" / "relu_scale.py"


def _env(tmp: Path) -> dict[str, str]:
    return {**os.environ, "XDG_CACHE_HOME": str(tmp / "cache")}


def _cli(argv: list[str], tmp: Path, timeout: float = 400, drop_env: tuple[str, ...] = ()
         ) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in _env(tmp).items() if k not in drop_env}
    return subprocess.run([sys.executable, "-c", "import sys; from kernelskill.cli.main import main; "
                           "sys.exit(main())", *argv], cwd=tmp, env=env, text=True,
                          capture_output=True, timeout=timeout)


@pytest.mark.slow
def test_ctrl_c_prints_a_complete_resume_command_that_keeps_every_option(tmp_path: Path) -> None:
    argv = ["optimize", str(PROBLEM), "--device", "cpu", "--rounds", "1", "--precision", "strict",
            "--out", "chosen", "--thread", "t-cli"]
    # Started with SIGINT ignored, as `cmd &` in a script starts it: Ctrl-C must still stop it.
    proc = subprocess.Popen([sys.executable, "-c", "import sys; from kernelskill.cli.main import main; "
                             "sys.exit(main())", *argv], cwd=tmp_path, env=_env(tmp_path), text=True,
                            stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    deadline = time.time() + 300
    while time.time() < deadline:  # Ctrl-C while the first candidate is being judged
        line = proc.stderr.readline()
        if line.startswith("generator:") or not line:
            break
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    hint = re.search(r"resume with `([^`]+)`", err)
    assert hint, err
    typed = shlex.split(hint.group(1))
    assert typed[:2] == ["kernelskill", "optimize"] and "--thread" in typed and "--out" not in typed
    done = _cli(typed[1:], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "resuming thread t-cli" in done.stderr
    assert (tmp_path / "chosen" / "solution.py").exists() and (tmp_path / "chosen" / "report.json").exists()
    assert not (tmp_path / "runs").exists()  # the out folder came from the thread, not the default
    import json

    report = json.loads((tmp_path / "chosen" / "report.json").read_text())
    assert report["settings"]["precision"] == "strict" and report["settings"]["rounds"] == 1
    # The same options again are accepted (a finished thread rewrites its outputs where they were).
    (tmp_path / "chosen" / "report.json").unlink()
    again = _cli([*typed[1:], "--rounds", "1", "--device", "cpu"], tmp_path)
    assert again.returncode == 0 and (tmp_path / "chosen" / "report.json").exists(), again.stderr
    # A changed option is refused in one line, naming the option and both values.
    for extra, says in ((["--rounds", "3"], "--rounds 1 (asked 3)"), (["--out", "elsewhere"], "--out"),
                        (["--precision", "tf32"], "--precision strict (asked tf32)")):
        refused = _cli([*typed[1:], *extra], tmp_path)
        err_lines = [ln for ln in refused.stderr.splitlines() if ln.strip()]
        assert refused.returncode == 2 and len(err_lines) == 1 and says in err_lines[0], refused.stderr
    assert not (tmp_path / "elsewhere").exists()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_sigterm_and_sighup_stop_a_run_as_ctrl_c_does(tmp_path: Path, sig: signal.Signals) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import sys; from kernelskill.cli.main import main; "
                             "sys.exit(main())", "optimize", str(PROBLEM), "--device", "cpu", "--rounds",
                             "1", "--thread", "t-term"], cwd=tmp_path, env=_env(tmp_path), text=True,
                            stderr=subprocess.PIPE)
    deadline = time.time() + 300
    while time.time() < deadline:
        line = proc.stderr.readline()
        if line.startswith("generator:") or not line:
            break
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert re.search(r"resume with `kernelskill optimize [^`]*--thread t-term", err), err


BROKEN = (ROOT / "tests" / "fixtures" / "broken_reference.py").read_text()

NAN = BROKEN.replace("return x @ torch.ones(3, 5)", "return torch.log(x - 10.0)")
BAD_INPUTS = BROKEN.replace("return [torch.randn(4, 4)]", "return [torch.randn(4, 4, size=3)]")


@pytest.mark.parametrize("source, says", [
    (BROKEN, "Model(*get_init_inputs())(*get_inputs()) failed: RuntimeError: mat1 and mat2"),
    (NAN, "NaN or Inf on finite inputs"),
    (BAD_INPUTS, "get_inputs() failed: TypeError"),
])
def test_a_broken_reference_is_refused_before_anything_is_written(tmp_path: Path, source: str,
                                                                   says: str) -> None:
    (tmp_path / "broken.py").write_text(source)
    res = _cli(["optimize", "broken.py", "--device", "cpu", "--thread", "t-broken"], tmp_path, timeout=200)
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.returncode == 2 and len(lines) == 1, res.stderr
    assert lines[0].startswith("kernelskill optimize: broken.py: ") and says in lines[0], lines
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.py"]  # no runs/, no cache, no thread


def test_an_author_error_is_the_one_line_even_while_the_reference_check_runs(tmp_path: Path) -> None:
    """The reference check runs beside the author's set-up: an author that cannot start is
    reported alone (not the broken reference found meanwhile), and nothing is written."""
    (tmp_path / "broken.py").write_text(BROKEN)
    env_key = "KERNELSKILL_TEST_NO_SUCH_KEY"
    (tmp_path / "cfg.toml").write_text(f'[llm]\napi_key_env = "{env_key}"\n')
    res = _cli(["optimize", "broken.py", "--device", "cpu", "--author", "llm", "--config", "cfg.toml"],
               tmp_path, timeout=200, drop_env=(env_key, "OPENAI_BASE_URL"))
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.returncode == 2 and len(lines) == 1 and f"${env_key}" in lines[0], res.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.py", "cfg.toml"]


def test_optimize_refuses_bad_input_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Usage errors exit 2 with one line and write nothing: a missing file, a file that is not a
    problem, CUDA without a GPU (before any candidate is written or judged)."""
    import torch
    from kernelskill.cli.main import main

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    not_problem = tmp_path / "not_problem.py"
    not_problem.write_text("import torch\n\n\nclass Model(torch.nn.Module):\n    pass\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    cases = [(["no/such/problem.py"], "not found"), ([str(not_problem)], "get_inputs"),
             ([str(ROOT / "problems/level1/11_gelu.py"), "--device", "cuda"], "no GPU is visible")]
    for argv, says in cases:
        assert main(["optimize", *argv]) == 2
        err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
        assert len(err) == 1 and says in err[0], err
    assert not (tmp_path / "runs").exists()

"""`langgraph up` / `langgraph build` from this repository, checked without a container daemon: both
configurations pass the langgraph CLI's own validation, and the Dockerfile it generates installs
this package and the PostgreSQL client and serves graph/app.py (langgraph.postgres.json also names
the served checkpointer). README's team section has the commands that need a daemon."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LANGGRAPH = str(Path(sys.executable).with_name("langgraph"))


def _langgraph(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([LANGGRAPH, *argv], cwd=ROOT, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("config", ["langgraph.json", "langgraph.postgres.json"])
def test_the_config_validates_and_builds_a_dockerfile(config: str, tmp_path: Path) -> None:
    done = _langgraph("validate", "-c", config)
    assert done.returncode == 0 and "is valid" in done.stdout, done.stdout + done.stderr
    out = tmp_path / "Dockerfile"
    done = _langgraph("dockerfile", "-c", config, str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    text = out.read_text()
    deps = f"/deps/{ROOT.name}"  # the CLI names the image's copy after the checkout's folder
    assert f"ADD . {deps}" in text  # this repository, installed as the kernelskill package
    assert f"""LANGSERVE_GRAPHS='{{"kernelskill": "{deps}/graph/app.py:graph"}}'""" in text
    assert "langgraph-checkpoint-postgres psycopg[binary]" in text  # the statistics' client
    served = f"""LANGGRAPH_CHECKPOINTER='{{"path": "{deps}/graph/app.py:checkpointer"}}'"""
    assert (served in text) == (config == "langgraph.postgres.json")

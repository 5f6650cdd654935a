"""A project and a venv that live under /tmp: the child's private /tmp shows them, read-only, and
nothing else of the parent's /tmp (eval/sandbox/paths.tmp_keep, eval.sandbox.supervisor._mask_keeping).

The evaluator runs in a subprocess whose interpreter is a venv under /tmp and whose kernelskill
is a copy under /tmp; it probes the layers and runs a sandboxed child that reports what it sees.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

import kernelskill
import pytest
from kernelskill.eval.sandbox.paths import tmp_keep
from sandbox_util import LAYERS, needs

HERE = Path(__file__).resolve().parent
PACKAGE = Path(kernelskill.__file__).resolve().parent
SKIP = shutil.ignore_patterns(".git", "__pycache__", "tests", "problems", "skills", "runs", ".venv", "*.md")

EVALUATOR = """
import json, sys
import kernelskill
from kernelskill.eval.sandbox import layers as S
from kernelskill.eval.child import run_child
code = '''
import json, os, kernelskill
seen = {"kernelskill": kernelskill.__file__, "tmp": sorted(os.listdir("/tmp"))}
for name, path in REQUEST["probe"].items():
    try:
        seen[name] = open(path).read()
    except OSError as e:
        seen[name] = type(e).__name__
try:
    open(REQUEST["plant"], "w").write("x")
    seen["plant"] = "written"
except OSError as e:
    seen["plant"] = type(e).__name__
print("SEEN", json.dumps(seen))
'''
req = json.loads(sys.argv[1])
run = run_child("sandbox_child", {"code": code, **req}, "cpu", 60)
seen = next((json.loads(ln[5:]) for ln in run.log_tail.splitlines() if ln.startswith("SEEN ")), None)
print(json.dumps({"namespaces": sorted(S.probe().namespaces), "parent_kernelskill": kernelskill.__file__,
                  "seen": seen, "log": run.log_tail}))
"""


@pytest.fixture
def tmp_checkout() -> Iterator[Path]:
    """/tmp/<x>/: site/kernelskill (a copy of the package) and site/sandbox_child.py; venv/ (its
    python, with this interpreter's packages through a .pth); secret.txt beside them."""
    root = Path(tempfile.mkdtemp(prefix="checkout-", dir="/tmp"))
    try:
        shutil.copytree(PACKAGE, root / "site" / "kernelskill", ignore=SKIP)
        shutil.copy(HERE / "sandbox_child.py", root / "site")
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "venv")], check=True)
        purelib = Path(sysconfig.get_path("purelib", vars={"base": str(root / "venv")}))
        (purelib / "outer.pth").write_text(sysconfig.get_path("purelib") + "\n")
        (root / "secret.txt").write_text("hunter2-beside\n")
        yield root
    finally:
        shutil.rmtree(root)


@needs("mount")
def test_a_checkout_and_venv_under_tmp_are_kept_read_only_and_the_rest_of_tmp_stays_hidden(
        tmp_checkout: Path) -> None:
    fd, other = tempfile.mkstemp(prefix="parent-secret-", dir="/tmp")
    os.write(fd, b"hunter2-other\n")
    os.close(fd)
    plant = tmp_checkout / "site" / "kernelskill" / "planted.py"
    request = {"probe": {"beside": str(tmp_checkout / "secret.txt"), "other": other,
                         "own_code": str(tmp_checkout / "site" / "kernelskill" / "__init__.py")},
               "plant": str(plant)}
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PYTHONPATH"] = str(tmp_checkout / "site")
    env["XDG_CACHE_HOME"] = str(tmp_checkout / "cache")  # the compile caches: in no other /tmp folder
    try:
        res = subprocess.run([str(tmp_checkout / "venv" / "bin" / "python"), "-c", EVALUATOR,
                              json.dumps(request)], capture_output=True, text=True, timeout=300, env=env)
        planted = plant.exists()
    finally:
        os.unlink(other)
        plant.unlink(missing_ok=True)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["parent_kernelskill"].startswith(str(tmp_checkout))  # the copy under /tmp is under test
    # The probe kept every namespace this host gives (it failed to start a child from /tmp before).
    assert out["namespaces"] == sorted(LAYERS.namespaces)
    assert not planted, "the child wrote into the checkout"
    seen = out["seen"]
    assert seen is not None, out["log"]
    assert seen["kernelskill"].startswith(str(tmp_checkout / "site")), seen
    assert seen["own_code"].startswith('"""'), seen  # kept folders are readable
    assert seen["beside"] == seen["other"] == "FileNotFoundError", seen  # the rest of /tmp is not
    assert seen["plant"] in ("OSError", "PermissionError"), seen  # read-only file system, or mode
    # /tmp shows the checkout's folder (only what is kept in it), the child's own scratch folder
    # and, when this test itself runs from under /tmp (a CI clone made by mktemp), the folders of
    # its own environment's import paths (PATH's venv), which the sandbox keeps read-only too.
    assert tmp_checkout.name in seen["tmp"] and os.path.basename(other) not in seen["tmp"], seen
    kept = {Path(k).relative_to("/tmp").parts[0] for k in tmp_keep(env, "/tmp/kernelskill-eval-x")}
    kept.add(tmp_checkout.name)
    assert all(n in kept or n.startswith("kernelskill-eval-") for n in seen["tmp"]), seen


def test_tmp_keep_leaves_out_tmp_itself_the_scratch_folders_and_the_caches() -> None:
    scratch = "/tmp/runs/kernelskill-eval-abc"
    given = ["/tmp", "/tmp/runs", "/tmp/runs/kernelskill-eval-xyz/lib", f"{scratch}/lib",
             "/tmp/kernelskill-probe-1", "/tmp/proj/src", "/tmp/xdg/kernelskill-compile/triton",
             "/tmp/venv/bin", "/usr/lib/python3"]
    env = {"PYTHONPATH": os.pathsep.join([*given[:6], "relative/dir"]), "TRITON_CACHE_DIR": given[6],
           "PATH": os.pathsep.join(given[7:])}
    kept = tmp_keep(env, scratch, [given[6]])
    # Only the checkout's and the venv's folders; /usr is not under /tmp (it is read-only anyway).
    assert sorted(p for p in kept if p in given) == ["/tmp/proj/src", "/tmp/venv/bin"]

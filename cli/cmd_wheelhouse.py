"""`kernelskill wheelhouse DIR`: every wheel an air-gapped GPU host needs, built where pip works.

The GPU node usually has torch and triton already (a CUDA torch is gigabytes), so they are
skipped by default. Steps: build kernelskill's own wheel from the source checkout; resolve the
full dependency closure for the *target* interpreter and platform (`pip install --dry-run
--report`); download exactly those wheels (`pip download --no-deps`). On the GPU host:

    pip install --no-index --find-links DIR kernelskill
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

# Rationale: manylinux tags are matched exactly by pip, so list the common ones; wheels built for
# older glibc run on newer systems.
PLATFORMS = ["manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_24_x86_64",
             "manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux1_x86_64"]
DEFAULT_SKIP = ["torch", "triton"]
SKIP_PREFIXES = ("nvidia-",)  # CUDA runtime wheels come with the GPU node's torch


EXAMPLES = ("kernelskill wheelhouse wheels/ --python-version 3.12",)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("out", help="folder to fill with wheels")
    p.add_argument("--python-version", default="3.12", help="target interpreter (default 3.12)")
    p.add_argument("--platform", action="append", default=None,
                   help="target platform tag (repeatable; default: common manylinux x86_64 tags)")
    p.add_argument("--skip", default=",".join(DEFAULT_SKIP),
                   help="packages the target already has (default torch,triton; CUDA wheels always)")


def source_root() -> Path:
    from .main import UsageError

    root = Path(__file__).resolve().parents[1]
    if not (root / "pyproject.toml").exists():
        raise UsageError("needs a source checkout (pyproject.toml next to the package); "
                         "run it from a clone of the repository")
    return root


def closure(report: dict, skip: set[str]) -> list[str]:
    """Pure: `name==version` pins of the resolved packages, minus skipped ones and our own."""
    pins = []
    for item in report.get("install", []):
        meta = item.get("metadata", {})
        name = str(meta.get("name", "")).lower().replace("_", "-")
        if not name or name == "kernelskill" or name in skip or name.startswith(SKIP_PREFIXES):
            continue
        pins.append(f"{name}=={meta['version']}")
    return sorted(pins)


def run(args: argparse.Namespace) -> int:
    from .main import UsageError

    root = source_root()
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    skip = {s.strip().lower() for s in args.skip.split(",") if s.strip()}
    target = ["--only-binary=:all:", "--python-version", args.python_version, "--implementation", "cp"]
    for plat in args.platform or PLATFORMS:
        target += ["--platform", plat]
    pip = [sys.executable, "-m", "pip"]
    print(f"building the kernelskill wheel into {out}", file=sys.stderr)
    _check(subprocess.run([*pip, "wheel", "--no-deps", "-q", "-w", str(out), str(root)]), "pip wheel")
    wheel = max(out.glob("kernelskill-*.whl"), key=lambda p: p.stat().st_mtime)
    with tempfile.TemporaryDirectory() as tmp:
        report_path = Path(tmp) / "report.json"
        print("resolving dependencies for the target", file=sys.stderr)
        _check(subprocess.run([*pip, "install", "-q", "--dry-run", "--ignore-installed", "--target", tmp,
                               "--report", str(report_path), *target, str(wheel)]), "pip resolve")
        pins = closure(json.loads(report_path.read_text()), skip)
    if not pins:
        raise UsageError("resolved no dependencies; check --python-version and --platform")
    print(f"downloading {len(pins)} wheels", file=sys.stderr)
    download = [*pip, "download", "-q", "--no-deps", "-d", str(out), *target, *pins]
    _check(subprocess.run(download), "pip download")
    (out / "INSTALL.txt").write_text(
        "On the GPU host (torch and triton already installed):\n"
        f"    pip install --no-index --find-links {out.name} kernelskill\n"
        "or, into a scratch folder without touching the environment:\n"
        f"    pip install --no-index --no-deps --target /tmp/site {out.name}/*.whl\n"
        "    export PYTHONPATH=/tmp/site\n")
    total = sum(p.stat().st_size for p in out.glob("*.whl")) / 2**20
    print(f"{len(list(out.glob('*.whl')))} wheels, {total:.0f} MiB in {out}; see INSTALL.txt")
    return 0


def _check(proc: subprocess.CompletedProcess, what: str) -> None:
    from .main import UsageError

    if proc.returncode != 0:
        raise UsageError(f"{what} failed (exit {proc.returncode}); see pip's output above")

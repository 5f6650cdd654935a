"""The judge process's entry: it starts the candidate process first, then imports the judge.

    python -P -m kernelskill.eval.judge_main REQUEST.json RESULT.json PROGRESS

Each process spends seconds importing torch; starting the candidate before the judge imports
torch (this module and judge_link are standard library only) overlaps the two imports.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from .judge_link import CPU_OMP_WAIT_POLICY, CandidateLink, deadline
from .sandbox_env import child_exit


def main(argv: list[str] | None = None) -> int:
    # The signing key arrives on stdin before any problem code runs; no candidate code runs here.
    key = bytes.fromhex(sys.stdin.readline().strip())
    req_path, res_path, progress = (Path(a) for a in (argv or sys.argv[1:]))
    req = json.loads(req_path.read_text())
    req_path.unlink()
    opts = req.get("options") or {}
    device = "cuda" if opts.get("device", "cuda") == "cuda" else "cpu"
    if device == "cpu":  # read by OpenMP when torch loads, below
        os.environ["OMP_WAIT_POLICY"] = CPU_OMP_WAIT_POLICY
    link = CandidateLink(device, deadline(req, float(opts.get("timeout_s", 600.0))), progress.parent)
    from .worker import judge
    return judge(key, req, res_path, progress, link)


if __name__ == "__main__":
    child_exit(main())

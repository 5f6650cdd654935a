"""A judge stand-in for test_boundary.py, run through run_child as the real judge is.

It holds a secret in its memory and starts tests/eval/boundary_attacker.py the way the real judge
starts a candidate process (`sandbox.sandboxed_popen(..., role="candidate")`), or, as the test's
control, as a plain child of a dumpable judge: what the judge was before the boundary, sandboxed
for the request's device as the judge's own candidate would be. It then signs what the attacker
printed, proving it outlived the attack.

run_child's protocol: the key on stdin, then REQUEST RESULT PROGRESS on the command line.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

from kernelskill.eval.judge.main import _not_dumpable
from kernelskill.eval.sandbox import layers as sandbox
from kernelskill.eval.sandbox.signing import sign

ATTACKER = str(Path(__file__).with_name("boundary_attacker.py"))


def main() -> None:
    req_path, res_path = Path(sys.argv[1]), Path(sys.argv[2])
    req = json.loads(req_path.read_text())
    req_path.unlink()
    if req["boundary"]:
        _not_dumpable()
    key = bytes.fromhex(sys.stdin.readline().strip())
    held = [f"KS-SECRET-{req['secret']}".encode()]  # what the attacker looks for in our memory
    scratch = Path(tempfile.mkdtemp(prefix="kernelskill-candidate-"))
    log = scratch / "attack.log"
    ours, theirs = socket.socketpair()
    # The control's attacker reads memory but kills nobody: it must leave a judge to sign.
    judge_pid = os.getpid() if req["boundary"] else 0
    cmd = [sys.executable, ATTACKER, str(judge_pid), req["socket"], req["cache"], req["problem"],
           req["tag"]]
    with open(log, "wb") as logf:
        if req["boundary"]:
            run = sandbox.sandboxed_popen(cmd, scratch, req.get("device", "cpu"), role="candidate",
                                          stdin=theirs, stdout=logf, stderr=subprocess.STDOUT)
            try:
                run.proc.wait(timeout=60)
            finally:
                sandbox.kill_all(run)
        else:
            subprocess.run(cmd, stdin=theirs, stdout=logf, stderr=subprocess.STDOUT, timeout=60)
    theirs.close()
    body = json.dumps({"log": log.read_text(errors="replace"), "held": len(held)})
    res_path.write_text(json.dumps({"result": body, "mac": sign(key, body)}))


if __name__ == "__main__":
    main()

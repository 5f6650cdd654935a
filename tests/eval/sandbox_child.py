"""A child for test_sandbox.py: runs its request's `code` in the sandbox, as a candidate would.

run_child's protocol: the key on stdin, then REQUEST RESULT PROGRESS on the command line. The
code gets `REQUEST` (the parsed request) and `SCRATCH` (its folder); what it prints is the log.
"""

import json
import sys
from pathlib import Path


def main() -> None:
    sys.stdin.readline()
    req_path = Path(sys.argv[1])
    req = json.loads(req_path.read_text())
    env = {"__name__": "__child__", "REQUEST": req, "SCRATCH": req_path.parent}
    exec(compile(req["code"], "<sandboxed test child>", "exec"), env)


if __name__ == "__main__":
    main()

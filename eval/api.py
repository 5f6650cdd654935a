"""The evaluator's one call: evaluate(problem, candidate, options) -> EvalResult.

Cheap checks run here (the problem's shape, the candidate's syntax and static checks); the
candidate itself only ever runs in a child process inside the OS sandbox (eval/sandbox.py: an
allowlisted environment, no network, a read-only file system but its scratch folder, rlimits,
every descendant killed at the end), and the problem's folder not importable. A crash, an
illegal memory access or a hang
is an outcome, never a dead run. The worker signs its result with a per-run key it receives on
stdin, so a candidate that writes a result file of its own is not believed.
"""

from __future__ import annotations

import ast
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from . import ceilings, sandbox
from . import precision as P
from .problem import ProblemError, check_problem_source
from .signing import verify
from .static_checks import problem_is_fp32, run_static_checks
from .types import EvalOptions, EvalResult

RESULT_CAP = 16 << 20  # bytes of a result file read back; a real one is a few kB


def evaluate(problem_source: str, candidate_source: str, options: EvalOptions | None = None, *,
             problem_name: str = "problem.py", candidate_name: str = "candidate.py") -> EvalResult:
    opts = options or EvalOptions()
    result = EvalResult(device=opts.device, timing_is_cpu=opts.device != "cuda")
    try:
        policy = P.policy(opts.precision)
    except ValueError as e:
        result.usage_error = True
        return result.fail("load", str(e))
    result.precision_policy, result.precision_flags = policy.name, policy.flags()
    try:
        check_problem_source(problem_source, problem_name)
    except ProblemError as e:
        result.usage_error = True
        return result.fail("load", str(e))
    try:
        ast.parse(candidate_source, filename=candidate_name)
    except SyntaxError as e:
        return result.fail("compile", f"{candidate_name}:{e.lineno}: syntax error: {e.msg}", "syntax")
    t0 = time.perf_counter()
    failures = run_static_checks(candidate_source, fp32_problem=problem_is_fp32(problem_source),
                                 precision=policy.name)
    result.stage_seconds["static"] = round(time.perf_counter() - t0, 3)
    if failures:
        names = list(dict.fromkeys(f.check for f in failures))
        return result.fail("static", f"{failures[0].message} ({len(failures)} static check failures)",
                           *names)
    out = _run_worker(problem_source, candidate_source, opts, problem_name, candidate_name, result)
    out.stage_seconds["static"] = result.stage_seconds["static"]
    return out


def _run_worker(problem_source: str, candidate_source: str, opts: EvalOptions, problem_name: str,
                candidate_name: str, result: EvalResult) -> EvalResult:
    t0 = time.perf_counter()
    run = run_child("kernelskill.eval.judge_main", {
        "problem_source": problem_source, "candidate_source": candidate_source,
        "problem_name": problem_name, "candidate_name": candidate_name, "options": opts.to_dict(),
        "deadline_unix": time.time() + opts.timeout_s},
        opts.device, opts.timeout_s)
    if run.timed_out:
        result.log_tail = run.log_tail
        return result.fail(run.stage, f"timed out after {opts.timeout_s:g} s during {run.stage}", "timeout")
    if run.payload is None:
        result.log_tail = run.log_tail
        return result.fail(run.stage, f"worker crashed during {run.stage} {run.crash_reason()}", "crash")
    out = EvalResult.from_dict(run.payload)
    out.log_tail = run.log_tail
    if out.elapsed_s is None:
        out.elapsed_s = run.elapsed_s
    out.stage_seconds["processes"] = round(max(run.elapsed_s - out.elapsed_s, 0.0), 3)
    # The parent's bookkeeping around the child: scratch folder, GPU ceilings copied in and out.
    out.stage_seconds["parent"] = round(max(time.perf_counter() - t0 - run.elapsed_s, 0.0), 3)
    return out


@dataclass
class ChildRun:
    """What a child process left: its signed payload (None when it wrote none we can believe)."""

    payload: dict | None
    stage: str
    """The last stage the child wrote to its PROGRESS file."""
    log_tail: str
    timed_out: bool
    returncode: int
    elapsed_s: float

    def crash_reason(self) -> str:
        """'(exit code N): last log line' or '(signal SIGSEGV): ...', for a one-line error."""
        why = f"exit code {self.returncode}" if self.returncode >= 0 else \
            f"signal {signal.Signals(-self.returncode).name}"
        last = self.log_tail.strip().splitlines()[-1][:300] if self.log_tail.strip() else "no output"
        return f"({why}): {last}"


def run_child(module: str, request: dict, device: str, timeout_s: float,
              reference_only: bool = False) -> ChildRun:
    """Run `python -P -m MODULE REQUEST RESULT PROGRESS` in a scratch folder, in the sandbox
    (eval/sandbox.py: allowlisted environment, namespaces, rlimits, another uid where possible).

    The child reads a per-run signing key from stdin and must sign its result with it; on expiry
    of `timeout_s`, and in any case once it exits, it and everything it started are killed.
    `reference_only`: the child runs only the user's reference (sandbox.sandboxed_popen).
    """
    key = secrets.token_bytes(32)
    with tempfile.TemporaryDirectory(prefix="kernelskill-eval-") as tmp:
        d = Path(tmp)
        req, res, progress, log = d / "request.json", d / "result.json", d / "progress", d / "worker.log"
        req.write_text(json.dumps(request))
        progress.write_text("load")
        gpu_ceilings = device == "cuda" and module != ceilings.MODULE and not reference_only
        table = ceilings.prepare(d, run_child) if gpu_ceilings else {}
        # -P: the working directory is not put on sys.path; cwd is the scratch folder anyway.
        cmd = [sys.executable, "-P", "-m", module, str(req), str(res), str(progress)]
        started = time.time()
        timed_out = False
        with open(log, "wb") as logf:
            run = sandbox.sandboxed_popen(cmd, d, device, timeout_s=timeout_s, stdin=subprocess.PIPE,
                                          stdout=logf, stderr=subprocess.STDOUT,
                                          reference_only=reference_only)
            try:
                run.proc.communicate(key.hex().encode() + b"\n", timeout=timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
            finally:
                sandbox.kill_all(run)  # nothing the candidate started may outlive the evaluation
        if gpu_ceilings:
            ceilings.after(d, table, run_child)
        return ChildRun(payload=None if timed_out else _verified(res, key),
                        stage=sandbox.read_capped(progress, 64).strip() or "load", log_tail=_tail(log),
                        timed_out=timed_out, returncode=run.returncode(),
                        elapsed_s=round(time.time() - started, 3))


def _verified(res: Path, key: bytes) -> dict | None:
    try:
        wrapped = json.loads(sandbox.read_capped(res, RESULT_CAP))
        body, mac = wrapped["result"], wrapped["mac"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(body, str) or not verify(key, body, str(mac)):
        return None
    return json.loads(body)


def _tail(log: Path, n: int = 3000) -> str:
    """The log's last `n` bytes, read without loading it (the child may have written 256 MiB)."""
    try:
        with open(log, "rb", opener=sandbox.no_block) as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - n))
            return f.read(n).decode(errors="replace")
    except OSError:
        return ""

"""Does the problem's own reference run? Model(*get_init_inputs())(*get_inputs()), once, in a child.

    python -m kernelskill.eval.reference_check REQUEST.json RESULT.json PROGRESS

Run before any candidate is written, so a broken problem file is reported as the problem's fault
in one line (instead of every candidate being rejected "at compile" against a reference that
cannot run). Same sandbox and signed result as the evaluation worker (child.run_child).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from .sandbox.env import child_exit


def check_reference(problem_source: str, device: str, size: str, precision: str = "default",
                    problem_name: str = "problem.py", timeout_s: float = 300.0) -> str | None:
    """None when the reference builds, runs and gives finite outputs on finite inputs on `device`
    at `size`; otherwise one line naming the problem file and what failed."""
    from .child import run_child

    run = run_child("kernelskill.eval.reference_check", {
        "problem_source": problem_source, "problem_name": problem_name, "device": device, "size": size,
        "precision": precision}, device, timeout_s, reference_only=True)
    if run.timed_out:
        return f"{problem_name}: the reference did not finish within {timeout_s:g} s during {run.stage}"
    if run.payload is None:
        return f"{problem_name}: the reference crashed during {run.stage} {run.crash_reason()}"
    return run.payload.get("problem")


def _one_line(e: BaseException) -> str:
    return f"{type(e).__name__}: {' '.join(str(e).split())[:300]}"


def _finite(obj: Any) -> bool:
    import torch

    from .harness import flatten
    return all(bool(torch.isfinite(t).all()) for _, t in flatten(obj)
               if isinstance(t, torch.Tensor) and t.is_floating_point())


def _check(req: dict[str, Any], progress: Path) -> str | None:
    import torch

    from . import harness as H
    from . import precision as P
    from .problem import ProblemError, load_problem

    name, device = req["problem_name"], req["device"]
    if device == "cuda" and not torch.cuda.is_available():
        return "CUDA requested but no GPU is visible to PyTorch; use --device cpu"
    try:
        problem = load_problem(req["problem_source"], req["size"], name)
    except ProblemError as e:
        return str(e).splitlines()[0]
    step = "Model(*get_init_inputs())"
    try:
        progress.write_text("build")
        model = H.build(problem.model_cls, problem, 0, device)
        step = "get_inputs()"
        inputs = H.make_inputs(problem, 0, device)
        step = "Model(*get_init_inputs())(*get_inputs())"
        progress.write_text("forward")
        with torch.no_grad(), P.applied(P.policy(req["precision"])):
            out = model(*inputs)
    except Exception as e:
        return f"{name}: {step} failed: {_one_line(e)}"
    if _finite(inputs) and not _finite(out):
        return f"{name}: the reference returns NaN or Inf on finite inputs from get_inputs()"
    return None


def main(argv: list[str] | None = None) -> int:
    from .sandbox.signing import sign

    key = bytes.fromhex(sys.stdin.readline().strip())
    req_path, res_path, progress = (Path(a) for a in (argv or sys.argv[1:]))
    req = json.loads(req_path.read_text())
    body = json.dumps({"problem": _check(req, progress)})
    res_path.write_text(json.dumps({"result": body, "mac": sign(key, body)}))
    return 0


if __name__ == "__main__":
    child_exit(main())

"""The evaluation worker: runs in a child process, walks the stages, writes one JSON result.

    python -m kernelskill.eval.worker REQUEST.json RESULT.json PROGRESS

REQUEST holds the problem and candidate sources and the options. The worker writes the stage
it is entering to PROGRESS first, so that if it hangs or dies the parent can still say where.
Order: load (problem, then candidate) -> compile (construct + first call) -> correctness
(fresh and perturbed trials against float64) -> timing (candidate, eager, torch.compile,
speed of light) -> done.
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import torch

from . import audit, integrity, kernels, poison
from . import harness as H
from . import precision as P
from .compare import changes_across, compare
from .problem import CandidateError, ProblemError, load_candidate, load_problem
from .signing import sign
from .types import EvalOptions, EvalResult, Rejected


class Worker:
    def __init__(self, req: dict[str, Any], progress: Path):
        self.opts = EvalOptions.from_dict(req["options"])
        self.req = req
        self.progress = progress
        self.device = "cuda" if self.opts.device == "cuda" else "cpu"
        self.policy = P.policy(self.opts.precision)
        self.result = EvalResult(device=self.device, timing_is_cpu=self.device == "cpu",
                                 precision_policy=self.policy.name, precision_flags=self.policy.flags())

    def stage(self, name: str) -> None:
        self.result.stage = name
        self.progress.write_text(name)

    # ---- stages -------------------------------------------------------------------------
    def run(self) -> EvalResult:
        t0 = time.time()
        try:
            self._run()
            self.result.correct = True
            self.stage("done")
        except Rejected as r:
            self.result.fail(r.stage, r.reason, *r.checks)
        except audit.Violation as v:
            self.result.fail(self.result.stage, str(v), v.check)
        except ProblemError as e:
            self.result.usage_error = True
            self.result.fail("load", str(e))
        self.result.elapsed_s = round(time.time() - t0, 3)
        return self.result

    def _run(self) -> None:
        self.stage("load")
        if self.device == "cuda" and not torch.cuda.is_available():
            raise ProblemError("CUDA requested but no GPU is visible to PyTorch; use --device cpu")
        if self.device == "cuda":
            self.result.gpu_name = torch.cuda.get_device_name()
        self.problem = load_problem(self.req["problem_source"], self.opts.size, self.req["problem_name"])
        # Candidate code runs only inside the guard (audit.py); the judge's tools are checked after it.
        self.integrity = integrity.Integrity()
        (scratch := self.progress.parent / "scratch").mkdir(exist_ok=True)
        self.guard = audit.Guard(scratch, self.req["candidate_name"], self.progress.parent.resolve(),
                                 self.req["problem_name"], after=self.integrity.verify_quick)
        try:
            with self.guard:
                self.cand_module = load_candidate(self.req["candidate_source"], self.req["candidate_name"])
        except CandidateError as e:
            raise Rejected("load", str(e), "load") from None
        self.integrity.verify("the candidate's import")
        self.ref = self._build_reference()
        self.stage("compile")
        self.cand = self.guard.wrap(self._build_candidate())
        self.integrity.verify("the candidate's construction and first forward")
        self.stage("correctness")
        self._correctness()
        self.integrity.verify("the correctness trials")
        self.stage("timing")
        self._timing()
        self.integrity.verify("the timing runs")

    def _build_reference(self) -> torch.nn.Module:
        try:
            return H.build(self.problem.model_cls, self.problem, self.opts.seed, self.device)
        except Exception as e:
            raise ProblemError(f"{self.req['problem_name']}: Model(*get_init_inputs()) failed: "
                               f"{type(e).__name__}: {e}") from None

    def _build_candidate(self) -> torch.nn.Module:
        try:
            with self.guard:
                model = H.build(self.cand_module.ModelNew, self.problem, self.opts.seed, self.device,
                                wrap=poison.poisoned())
        except Exception as e:
            raise Rejected("compile", f"ModelNew(*get_init_inputs()) failed: {_one_line(e)}",
                           "compile_error") from None
        inputs = H.make_inputs(self.problem, self.opts.seed, self.device)
        try:
            # Poisoned here too: a CUDA graph captured on this first call records the NaN fill of
            # its own output buffers, so an element it never writes stays NaN in every replay.
            with torch.no_grad(), P.applied(self.policy), kernels.recording() as seen, \
                    poison.poisoned(), self.guard:
                model(*H.clone(inputs))
                _sync(self.device)
        except Exception as e:
            raise Rejected("compile", f"first forward failed: {_one_line(e)}", "compile_error") from None
        self.result.kernel_names = kernels.own_kernels(seen, self.cand_module.__name__)
        self.result.custom_kernels = len(self.result.kernel_names)
        return model

    def _reference_outputs(self, inputs: list[Any]) -> tuple[Any, Any, bool]:
        """(float64 output, PyTorch's fp32 output under the precision policy, whether the
        reference mutated its inputs). The fp32 output is the error-multiple rule's yardstick, so it
        is computed under the policy's flags, as the baselines run (TF32 convolutions under
        `default`): the tolerance follows the policy while the float64 reference stays the judge."""
        ref_in = H.clone(inputs)
        with torch.no_grad(), P.applied(self.policy):
            ref32 = self.ref(*ref_in)
        with torch.no_grad(), P.applied(P.POLICIES["strict"]):
            if self.ref64 is not None:
                ref64 = self.ref64(*H.to_double(H.clone(inputs)))
            else:  # no float64 copy: the strict fp32 result is the best reference there is
                ref64 = H.to_double(self.ref(*H.clone(inputs)) if self.policy.any_tf32 else ref32)
        return ref64, ref32, not H.same_values(ref_in, inputs)

    def _candidate_output(self, inputs: list[Any]) -> tuple[Any, bool]:
        cand_in = H.clone(inputs)
        if self.device == "cuda":
            poison.poison_cuda_allocator(2 * _nbytes(cand_in))
        try:
            with torch.no_grad(), P.applied(self.policy), poison.poisoned():
                out = self.cand(*cand_in)
                _sync(self.device)
        except Exception as e:
            raise Rejected("correctness", f"forward failed: {_one_line(e)}", "runtime_error") from None
        return out, not H.same_values(cand_in, inputs)

    def _correctness(self) -> None:
        self.ref64 = H.double_copy(self.ref)
        trials = [(f"trial {i}", self.opts.seed + i, None) for i in range(self.opts.trials)]
        trials += [(f"perturbed {name}", self.opts.seed + 1000 + j, fn)
                   for j, (name, fn) in enumerate(H.PERTURBATIONS.items())]
        base_outputs, worst, rules = [], 0.0, set()
        for label, seed, perturb in trials:
            inputs = H.make_inputs(self.problem, seed, self.device, perturb)
            ref64, ref32, ref_mutates = self._reference_outputs(inputs)
            if perturb is not None and not (_all_finite(ref64) and _all_finite(ref32)):
                continue  # outside the operator's domain or fp32's range: skip, don't judge
            out, cand_mutates = self._candidate_output(inputs)
            if cand_mutates and not ref_mutates:
                raise Rejected("correctness", f"{label}: the candidate modified its inputs in place; "
                               "the reference does not", "input_mutation")
            verdict = compare(out, ref64, ref32, self.opts.atol, self.opts.rtol)
            if not verdict.ok:
                hint = self._param_hint()
                raise Rejected("correctness", f"{label}: {verdict.reason}{hint}", "wrong_output")
            worst = max(worst, verdict.max_abs_err)
            self.result.torch_fp32_err = max(self.result.torch_fp32_err or 0.0, verdict.torch_err)
            rules.add(verdict.rule)
            if perturb is None:
                base_outputs.append(ref32)
                self.result.trials_run += 1
            else:
                self.result.perturbed_trials += 1
        self.result.max_abs_err = worst
        self.result.pass_rule = "fp32-error-multiple" if "fp32-error-multiple" in rules else "tolerance"
        self.result.degenerate = not changes_across(base_outputs)
        self.spot_ref = None

    def _param_hint(self) -> str:
        ref, cand = H.param_shapes(self.ref), H.param_shapes(self.cand)
        if ref != cand:
            return (f" (ModelNew's parameters {cand[:4]}... differ from Model's {ref[:4]}...: create the "
                    "same parameters in the same order so seeding gives identical weights)")
        return ""

    def _timing(self) -> None:
        from .timing_stage import run_timing
        run_timing(self)


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _nbytes(obj: Any) -> int:
    from .roofline import tensor_bytes
    return tensor_bytes(obj)


def _all_finite(obj: Any) -> bool:
    from .compare import flatten
    return all(bool(torch.isfinite(t).all()) for _, t in flatten(obj)
               if isinstance(t, torch.Tensor) and t.is_floating_point())


def _one_line(e: BaseException) -> str:
    msg = " ".join(str(e).split())
    return f"{type(e).__name__}: {msg[:400]}"


def main(argv: list[str] | None = None) -> int:
    # The signing key arrives on stdin before any problem or candidate code runs.
    key = bytes.fromhex(sys.stdin.readline().strip())
    req_path, res_path, progress = (Path(a) for a in (argv or sys.argv[1:]))
    req = json.loads(req_path.read_text())
    req_path.unlink()
    worker = Worker(req, progress)
    try:
        result = worker.run()
    except BaseException as e:  # an unexpected harness error is still an outcome, never a hang
        traceback.print_exc()
        result = worker.result.fail(worker.result.stage, f"evaluator error: {_one_line(e)}", "harness")
    body = json.dumps(result.to_dict())
    res_path.write_text(json.dumps({"result": body, "mac": sign(key, body)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

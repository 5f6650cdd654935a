"""The judge: runs in a child process, walks the stages, writes one signed JSON result.

    python -m kernelskill.eval.judge.main REQUEST.json RESULT.json PROGRESS   (main.py)

REQUEST holds the problem and candidate sources and the options. The judge writes the stage it
is entering to PROGRESS first, so that if it hangs or dies the parent can still say where. It
never imports or runs candidate code: it starts a candidate process (eval/judge/link.py), sends
it the candidate's source, the weight seed and get_init_inputs()'s values, and hands it inputs.
Order: load (problem, reference; candidate in its process) -> compile (construct + first forward,
already a checked trial) -> correctness (fresh and perturbed trials against float64) -> timing
(candidate, eager, torch.compile, speed of light) -> done.

Every seed is drawn here from the OS's random source, per evaluation (weights, every input set):
nothing in the options or the candidate's reach predicts an input.
"""

from __future__ import annotations

import json
import time
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from .. import harness as H
from ..problem import ProblemError, load_problem
from ..sandbox.signing import sign
from ..types import EvalResult, Rejected
from . import baselines
from .compare import ChangeTracker, Verdict, comparable, compare
from .kernel_names import judged_kernels
from .link import CandidateLink
from .remote import NAMED_BY_CANDIDATE_PROCESS, Remote
from .state import JudgeState, _one_line


class Worker(JudgeState):
    """The judge's walk through the stages: load, compile, correctness, timing."""

    # ---- stages -------------------------------------------------------------------------
    def run(self) -> EvalResult:
        t0 = time.time()
        # The request was made just before this process started (deadline_unix = then + timeout):
        # the interpreter's and the imports' share of "processes".
        sent = self.req.get("deadline_unix", 0.0) - self.opts.timeout_s
        if sent > 0:
            self.result.stage_seconds["processes.start"] = round(max(t0 - sent, 0.0), 3)
        try:
            self._run()
            self.result.correct = True
            self.stage("done")
        except Rejected as r:
            self.result.fail(r.stage, r.reason, *r.checks)
        except ProblemError as e:
            self.result.usage_error = True
            self.result.fail("load", str(e))
        finally:
            self.meter.reading()
            self._clock_stage()
        self.result.elapsed_s = round(time.time() - t0, 3)
        return self.result

    def _run(self) -> None:
        self.stage("load")
        if self.device == "cuda" and not torch.cuda.is_available():
            raise ProblemError("CUDA requested but no GPU is visible to PyTorch; use --device cpu")
        if self.device == "cuda":
            self.result.gpu_name = torch.cuda.get_device_name()
        self.problem = load_problem(self.req["problem_source"], self.opts.size, self.req["problem_name"])
        # Shared buffers come from a pool of their own: an IPC handle exposes a whole segment.
        self.pool = torch.cuda.MemPool() if self.device == "cuda" else None
        with self.spawned or CandidateLink(self.device, self.deadline) as link:
            self.link = link
            self.baseline_link = baselines.start(self)  # imports torch while the candidate is judged
            try:
                self._stages(link)
            finally:
                for which, proc in (("candidate", link), ("baseline", self.baseline_link)):
                    tail = proc.log_tail() if proc is not None else ""
                    if tail.strip():
                        print(f"--- {which} process output ---\n{tail}", flush=True)
                if self.baseline_link is not None:
                    self.baseline_link.close()
        self.result.tuning = link.tuning  # harvested as the link closed, its processes dead

    def _stages(self, link: CandidateLink) -> None:
        self.remote = Remote(link, self.device, self.pool)
        self.weight_seed = weight_seed = H.secret_seed()
        self.init_values = init_values = self._init_values()  # the baseline process's too
        # Measured before the candidate is imported, so the candidate cannot inflate it.
        with self.part("candidate_start"):
            self.ping_ms = self.remote.ping_ms()
        if self.opts.timing_mode == "rank":  # never under 'full': tuning.py says why
            link.seed_tuning(self.opts.tuning)
        link.send({"cmd": "init", "device": self.device, "precision": self.policy.name,
                   "source": self.req["candidate_source"], "filename": self.req["candidate_name"],
                   "weight_seed": weight_seed, "problem_file": self.req["problem_name"],
                   "kernel_pins": self.req.get("kernel_pins"), "init_values": init_values})
        # The reference is built while the candidate process builds its model: both construct the
        # same modules (a large model's weights are seconds of CPU initialisation each).
        with self.part("reference"):
            self.ref = self._build_reference(weight_seed, init_values)
            self.ref64 = H.double_copy(self.ref)
        with self.part("candidate_init"):
            reply = link.reply()
        if not reply.get("ok"):
            stage = "load" if reply.get("stage") == "load" else "compile"
            check = reply.get("check") if reply.get("check") in NAMED_BY_CANDIDATE_PROCESS else \
                "load" if stage == "load" else "compile_error"
            raise Rejected(stage, str(reply.get("error"))[:600], check)
        self.cand_params = reply.get("params") or []
        self.stage("compile")
        self._correctness()
        if self.opts.timing:
            self.stage("timing")
            self._timing()

    def _init_values(self) -> list[Any]:
        """get_init_inputs()'s values, on the CPU: it runs here only, under a seed of its own, so
        the reference, the candidate and the baselines are built from the same values."""
        try:
            H.seeded(H.secret_seed())
            return H.to_device(list(self.problem.get_init_inputs()), "cpu")
        except Exception as e:
            raise ProblemError(f"{self.req['problem_name']}: get_init_inputs() failed: "
                               f"{type(e).__name__}: {e}") from None

    def _build_reference(self, weight_seed: int, init_values: list[Any]) -> torch.nn.Module:
        """The reference, built as harness.build does, under the candidate's weight seed."""
        try:
            H.seeded(weight_seed)
            return self.problem.model_cls(*init_values).to(self.device)
        except Exception as e:
            raise ProblemError(f"{self.req['problem_name']}: Model(*get_init_inputs()) failed: "
                               f"{type(e).__name__}: {e}") from None

    def _correctness(self) -> None:
        changes, worst, rules = ChangeTracker(), 0.0, set()
        skipped, masked = [], 0
        self.float_inputs: list[int] | None = None
        """Positions of the floating tensor inputs, from the first trial's inputs."""
        for label, kind, which in self._trials():
            verdict = self._trial(label, kind, which, changes)
            if verdict is None:
                skipped.append(label)
                continue
            worst = max(worst, verdict.max_abs_err)
            self.result.torch_fp32_err = max(self.result.torch_fp32_err or 0.0, verdict.torch_err)
            rules.add(verdict.rule)
            masked += verdict.masked
            if kind is None:
                self.result.trials_run += 1
            else:
                self.result.perturbed_trials += 1
        self.result.max_abs_err = worst
        self.result.pass_rule = "fp32-error-multiple" if "fp32-error-multiple" in rules else "tolerance"
        self.result.degenerate = not changes.varies()
        if skipped or masked:
            print(f"correctness: {masked} output elements of perturbed trials left out where the "
                  f"reference is NaN/Inf; skipped, the reference being NaN/Inf everywhere: "
                  f"{', '.join(skipped) or 'none'}", flush=True)

    def _trials(self) -> Iterator[tuple[str, str | None, int | None]]:
        """(label, perturbation, input it perturbs) of each trial: the plain ones, then one input
        at a time (harness.perturbation_plan), planned from the inputs the first trial drew."""
        for i in range(self.opts.trials):
            yield f"trial {i}", None, None
        floats = self.float_inputs
        if floats is None:  # no plain trial ran
            floats = H.float_inputs(H.make_inputs(self.problem, H.secret_seed(), self.device))
        for kind, which in H.perturbation_plan(floats):
            yield f"perturbed {kind} (input {which})", kind, which

    def _trial(self, label: str, kind: str | None, which: int | None,
               changes: ChangeTracker) -> Verdict | None:
        """One checked forward against float64 (None: skipped, the reference NaN/Inf everywhere).
        A perturbed trial compares the elements where the reference is finite. Its tensors are
        this call's locals, freed when it returns, and each is dropped as soon as it is done with:
        the next trial never starts beside this one's outputs."""
        perturb = H.PERTURBATIONS[kind] if kind is not None else None
        with self.part("inputs"):
            inputs = H.make_inputs(self.problem, H.secret_seed(), self.device, perturb, which)
        if self.float_inputs is None:
            self.float_inputs = H.float_inputs(inputs)
        ref64, ref32, ref_mutates, ref_in = self.reference_outputs(inputs)
        if perturb is not None:
            with self.part("finite"):
                finite, total = comparable(ref64, ref32)
            if total and not finite:
                return None  # outside the operator's domain or fp32's range everywhere
        if self.remote.ref_desc is None:  # the first trial is the first forward
            self.ref_mutates = ref_mutates
            self.remote.set_contract(ref32, ref_in)
            self.remote.add_set(0, inputs)
        del ref_in
        with self.part("forward"):
            fwd = self.remote.forward(0, inputs, "trial", "compile_error" if self.result.stage ==
                                      "compile" else "runtime_error")
        del inputs
        if self.result.stage == "compile":
            self.result.kernel_names = judged_kernels(fwd.kernels, self.req["candidate_source"])
            self.result.custom_kernels = len(self.result.kernel_names)
            self.stage("correctness")
        fwd.check_contract("correctness", label)
        if fwd.mutated and not ref_mutates:
            raise Rejected("correctness", f"{label}: the candidate modified its inputs in place; "
                           "the reference does not", "input_mutation")
        with self.meter.section("compare"), self.part("compare"):
            verdict = compare(fwd.out, ref64, ref32, self.opts.atol, self.opts.rtol,
                              skip_nonfinite=perturb is not None)
        del fwd, ref64
        if not verdict.ok:
            raise Rejected("correctness", f"{label}: {verdict.reason}{self._param_hint()}",
                           "wrong_output")
        if perturb is None:
            with self.part("changes"):
                changes.add(ref32)
        return verdict

    def _param_hint(self) -> str:
        ref = H.param_shapes(self.ref)
        cand = [tuple(s) for s in self.cand_params]
        if ref != cand:
            return (f" (ModelNew's parameters {cand[:4]}... differ from Model's {ref[:4]}...: create the "
                    "same parameters in the same order so seeding gives identical weights)")
        return ""

    def _timing(self) -> None:
        from .timing_stage import run_timing
        run_timing(self)


def judge(key: bytes, req: dict[str, Any], res_path: Path, progress: Path,
          link: CandidateLink | None = None) -> int:
    """Evaluate `req` and write its result, signed with `key`, to `res_path`."""
    worker = Worker(req, progress, link)
    try:
        result = worker.run()
    except BaseException as e:  # an unexpected harness error is still an outcome, never a hang
        traceback.print_exc()
        result = worker.result.fail(worker.result.stage, f"evaluator error: {_one_line(e)}", "harness")
    finally:
        if link is not None:
            link.close()
    body = json.dumps(result.to_dict())
    res_path.write_text(json.dumps({"result": body, "mac": sign(key, body)}))
    return 0

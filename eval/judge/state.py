"""The judge's state for one evaluation: what every stage reads (the request, the reference and its
outputs, the candidate's process, the result being written) and the clocks of the stages.

worker.py's `Worker` walks the stages on it; the timing stage (timing_stage.py, remote_timing.py,
baselines.py) takes a JudgeState, and so names no module that calls it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from .. import harness as H
from .. import precision as P
from ..timing.warm_imports import WarmImports, modules_for
from ..types import EvalOptions, EvalResult
from .link import CandidateLink, deadline
from .memory import MemoryMeter, release

if TYPE_CHECKING:
    from ..problem import LoadedProblem
    from .remote import Remote


class JudgeState:
    # Set by Worker's walk (worker.py) before the stages that read them.
    problem: LoadedProblem
    remote: Remote
    ref: torch.nn.Module
    ref64: torch.nn.Module | None
    weight_seed: int
    init_values: list[Any]
    ping_ms: float
    ref_mutates: bool

    def __init__(self, req: dict[str, Any], progress: Path, link: CandidateLink | None = None):
        self.opts = EvalOptions.from_dict(req["options"])
        self.req = req
        self.progress = progress
        self.device = "cuda" if self.opts.device == "cuda" else "cpu"
        self.policy = P.policy(self.opts.precision)
        self.result = EvalResult(device=self.device, timing_is_cpu=self.device == "cpu",
                                 precision_policy=self.policy.name, precision_flags=self.policy.flags())
        self.deadline = deadline(req, self.opts.timeout_s)
        self.spawned = link
        """A candidate process started before this judge imported torch (judge_main), or None."""
        self.link: CandidateLink | None = None
        self.baseline_link: CandidateLink | None = None
        """The reference's own process, where eager and torch.compile are timed (eval/judge/baselines.py)."""
        self.meter = MemoryMeter(self.device, self.result.peak_memory_mb)
        self.ref64_device = self.device
        """Where the float64 reference runs: the host once it did not fit on the GPU."""
        self._stage_started: float | None = None
        self.imports = WarmImports(modules_for(self.device, self.opts.timing, self.opts.times_baselines()))
        """torch.compile's stack, imported while the judge waits (eval/timing/warm_imports.py)."""

    def stage(self, name: str) -> None:
        self._clock_stage()
        with self.part("release", name):  # charged to the stage it opens, as its clock is
            self.meter.enter_stage(name)
        self.result.stage = name
        if self.link is not None:
            self.link.stage = name
        self.progress.write_text(name)

    @contextlib.contextmanager
    def part(self, name: str, stage: str | None = None) -> Iterator[None]:
        """Charge the time inside to `stage.name` as well (stage_seconds' finer keys): where a
        stage's seconds go, e.g. timing.eager against timing.candidate."""
        t0, key = time.perf_counter(), f"{stage or self.result.stage}.{name}"
        try:
            yield
        finally:
            seconds = self.result.stage_seconds
            seconds[key] = round(seconds.get(key, 0.0) + time.perf_counter() - t0, 3)

    def _clock_stage(self) -> None:
        """Charge the time since the last stage change to the stage that was running."""
        now, seconds = time.perf_counter(), self.result.stage_seconds
        last = self._stage_started
        if last is not None and self.result.stage != "done":
            seconds[self.result.stage] = round(seconds.get(self.result.stage, 0.0) + now - last, 3)
        self._stage_started = now

    def reference_outputs(self, inputs: list[Any]) -> tuple[Any, Any, bool, list[Any]]:
        """(float64 output, PyTorch's fp32 output under the precision policy, whether the
        reference mutated its inputs, the inputs it ran on). The fp32 output is the error-multiple
        rule's yardstick, so it is computed under the policy's flags, as the baselines run (TF32
        convolutions under `default`): the tolerance follows the policy while the float64
        reference stays the judge. The float64 output comes first, its float64 inputs freed
        before the fp32 forward, so the two forwards' inputs are never alive together."""
        with self.meter.section("reference"), self.part("reference"):
            ref64 = self._float64_output(inputs) if self.ref64 is not None else None
            ref_in = H.clone(inputs)
            with torch.no_grad(), P.applied(self.policy):
                ref32 = self.ref(*ref_in)
            if ref64 is None:  # no float64 copy: the strict fp32 result is the best reference there is
                with torch.no_grad(), P.applied(P.POLICIES["strict"]):
                    ref64 = H.to_double(self.ref(*H.clone(inputs)) if self.policy.any_tf32 else ref32)
            return ref64, ref32, not H.same_values(ref_in, inputs), ref_in

    def _float64_output(self, inputs: list[Any]) -> Any:
        """The float64 reference's output: on the device while it fits there, else on the host
        (where it stays for the rest of the evaluation; the comparison moves it chunk by chunk)."""
        with torch.no_grad(), P.applied(P.POLICIES["strict"]):
            if self.ref64_device == "cuda":
                try:
                    return self.ref64(*H.double_clone(inputs))
                except torch.cuda.OutOfMemoryError as e:
                    oom = _one_line(e)
                self._float64_on_host(oom)
            try:
                return self.ref64(*H.double_clone(inputs, self.ref64_device))
            except Exception as e:
                if self.ref64_device == self.device:
                    raise
                raise RuntimeError(f"the float64 reference does not fit on the GPU and fails on the "
                                   f"host: {_one_line(e)}") from None

    def _float64_on_host(self, oom: str) -> None:
        self.ref64 = self.ref64.to("cpu")
        self.ref64_device = "cpu"
        release(True)
        print(f"the float64 reference does not fit on the GPU ({oom[:200]}): it runs on the host",
              flush=True)


def _one_line(e: BaseException) -> str:
    msg = " ".join(str(e).split())
    return f"{type(e).__name__}: {msg[:400]}"

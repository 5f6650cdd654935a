"""The judge's side of a forward in the candidate process: shared inputs in, checked outputs out.

The judge owns every buffer the candidate touches. An input set is a list of shared buffers
handed over once; before each forward the judge writes fresh values into it (its own private copy
kept for the mutation check), poisons the output slots, sends one command and takes the reply.
It then checks the description of the output against the reference's (eval/candidate/contract.py) and
copies the slots into memory of its own, so nothing the candidate does later changes what the
judge compares.

Every forward is the same "run" command whatever the judge means to do with it (check it, time it
or both): what it is for stays on this side. A "null" command runs the same protocol around a
forward that does nothing, so the judge can measure what a run costs besides the forward.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

import torch

from .. import harness as H
from ..candidate import contract, wire
from ..candidate.poison import fill_poison
from ..problem import ProblemError
from ..types import Rejected
from .link import CandidateLink

# Checks the candidate process names itself: the run-time guard's verdicts, and a forward that left
# a torch mode active (poison.ModeLeak). Nothing else it says is a check.
NAMED_BY_CANDIDATE_PROCESS = ("audit", "integrity", "deferred_work", "kernel_changed")


def fits_shared_memory(tensors: list[torch.Tensor], shm: str = "/dev/shm") -> None:
    """A usage error, in one line naming both sizes, when CPU tensors to share exceed the free
    space of /dev/shm (a tmpfs: the judge's own, half the RAM by default). Past it the first write
    into a shared buffer kills the judge with SIGBUS, which every evaluation would report as a crash."""
    need = sum(t.numel() * t.element_size() for t in tensors if not t.is_cuda)
    try:
        st = os.statvfs(shm)
    except OSError:
        return
    free = st.f_bavail * st.f_frsize
    if need > free:
        raise ProblemError(f"the inputs or outputs to hand the candidate take {need / 2**30:.2f} GiB of "
                           f"shared memory, more than the {free / 2**30:.2f} GiB free in {shm}: use a "
                           "smaller size (--size small) or a host with more RAM")


class SharedSet:
    """One input set in shared memory: a buffer per tensor input, other inputs by value."""

    def __init__(self, inputs: list[Any], pool: Any):
        if any(isinstance(x, (list, tuple, dict)) for x in inputs):
            raise ProblemError("get_inputs() returns a nested structure; the evaluator hands a "
                               "candidate a flat list of tensors and numbers")
        fits_shared_memory([x for x in inputs if isinstance(x, torch.Tensor)])
        self.items = [wire.shared_like(x, pool) if isinstance(x, torch.Tensor) else x for x in inputs]

    def fill(self, inputs: list[Any]) -> None:
        if len(inputs) != len(self.items) or any(
                isinstance(b, torch.Tensor) != isinstance(x, torch.Tensor)
                or (isinstance(b, torch.Tensor) and (b.shape != x.shape or b.dtype != x.dtype))
                or (not isinstance(b, torch.Tensor) and b != x)
                for b, x in zip(self.items, inputs, strict=False)):
            raise ProblemError("get_inputs() returns different shapes, dtypes or values across "
                               "seeds; only tensor values may vary")
        for b, x in zip(self.items, inputs, strict=True):
            if isinstance(b, torch.Tensor):
                b.copy_(x)

    def handover(self) -> tuple[list[tuple[str, Any]], list[int]]:
        fds: list[int] = []
        items = [("tensor", wire.export(x, fds)) if isinstance(x, torch.Tensor) else ("value", x)
                 for x in self.items]
        return items, fds


@dataclass
class Forward:
    """One forward as the judge saw it."""

    out: Any
    """The output, rebuilt from the judge's own copies of the slots."""
    mutated: bool
    ms: float
    """The candidate process's time for the forward, layer-1 poison fills included (untrusted:
    bounded by `wall_ms`)."""
    wall_ms: float
    """The judge's wall clock from sending the command to receiving the reply."""
    idle_ms: float
    """The candidate process's host clock from its start event until the device was idle after
    the copy into the slots (untrusted like `ms`, measured by evaluator code the integrity check
    guards)."""
    kernels: list[str]
    broken: tuple[str, str] | None = None
    """(check, reason) when the output breaks the reference's contract (then `out` is None)."""
    fill_ms: float = 0.0
    """Of `ms`, the evaluator's NaN fills of tensors the forward made with empty* (untrusted)."""
    copy_ms: float = 0.0
    """The candidate process's time to describe the output and copy it into the slots (untrusted)."""

    def check_contract(self, stage: str, label: str) -> None:
        if self.broken:
            raise Rejected(stage, f"{label}: {self.broken[1]}", self.broken[0])


class Remote:
    """Forwards of the candidate on judge-owned inputs, checked against the reference's contract."""

    def __init__(self, link: CandidateLink, device: str, pool: Any):
        self.link, self.device, self.pool = link, device, pool
        self.sets: dict[int, SharedSet] = {}
        self.slots: list[torch.Tensor] = []
        self.ref_desc: dict[str, Any] | None = None

    def set_contract(self, ref_out: Any, ref_in: list[Any]) -> None:
        """The reference's output fixes the structure, and so the slots, every forward must fill."""
        self.ref_desc = contract.describe(ref_out, ref_in)
        self._hand_slots([t.detach() for t in contract.tensor_leaves(ref_out)])

    def mirror(self, other: Remote) -> None:
        """The contract and slot shapes of `other` (the candidate's), for the baseline process
        (eval/judge/baselines.py): the reference's output is what the candidate's contract describes."""
        self.ref_desc = other.ref_desc
        self._hand_slots(other.slots)

    def _hand_slots(self, like: list[torch.Tensor]) -> None:
        """Output slots shaped like `like`, in shared memory, handed to the process."""
        fits_shared_memory(like)
        self.slots = [wire.shared_like(t, self.pool) for t in like]
        fds: list[int] = []
        specs = [wire.export(s, fds) for s in self.slots]
        self._ok(self.link.request({"cmd": "slots", "specs": specs}, fds), "runtime_error")

    def add_set(self, set_id: int, inputs: list[Any]) -> None:
        self.sets[set_id] = shared = SharedSet(inputs, self.pool)
        items, fds = shared.handover()
        self._ok(self.link.request({"cmd": "inputs", "set": set_id, "items": items}, fds), "runtime_error")

    def forward(self, set_id: int, inputs: list[Any], purpose: str, check: str) -> Forward:
        """Run the candidate on `inputs` (written into set `set_id`); `check` names a failure.
        `purpose` ('trial', 'timed') is the judge's own note and is never sent: every forward is
        the same command, so the candidate cannot tell a checked run from a timed one."""
        shared = self.sets[set_id]
        shared.fill(inputs)
        for s in self.slots:
            fill_poison(s)  # a slot the candidate does not write reads as NaN, not as a stale output
        self._sync()
        reply, wall_ms = self._run("run", set_id, check)
        bad = contract.mismatch(reply.get("out"), self.ref_desc)
        out = None if bad else contract.rebuild(reply["out"], [s.clone() for s in self.slots])
        self._sync()
        return Forward(out, not H.same_values(shared.items, inputs), reply["ms"], wall_ms,
                       reply["idle_ms"], reply["kernels"], bad, reply["fill_ms"], reply["copy_ms"])

    def null_forward(self, set_id: int) -> Forward:
        """`forward`'s protocol around a forward that does nothing (the candidate process's
        "null"): its wall time is what a run costs besides the forward. No output is kept."""
        for s in self.slots:
            fill_poison(s)
        self._sync()
        reply, wall_ms = self._run("null", set_id, "crash")
        return Forward(None, False, reply["ms"], wall_ms, reply["idle_ms"], [], None, reply["fill_ms"],
                       reply["copy_ms"])

    def _run(self, cmd: str, set_id: int, check: str) -> tuple[dict[str, Any], float]:
        """Send one forward command; the reply with its times checked to be numbers, and the
        judge's wall clock around it."""
        shared = self.sets[set_id]
        nbytes = sum(x.numel() * x.element_size() for x in shared.items if isinstance(x, torch.Tensor))
        t0 = time.perf_counter()
        reply = self.link.request({"cmd": cmd, "set": set_id, "poison": 2 * nbytes})
        wall_ms = (time.perf_counter() - t0) * 1e3
        self._ok(reply, check, "forward failed: ")
        for key in ("ms", "idle_ms", "fill_ms", "copy_ms"):
            t = reply.get(key)
            if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 <= t < float("inf"):
                raise Rejected(self.link.stage, f"the candidate process reported a {key} of {t!r}", "crash")
            reply[key] = float(t)
        reply["kernels"] = [k for k in reply.get("kernels") or [] if isinstance(k, str)][:64]
        return reply, wall_ms

    def ping_ms(self, n: int = 20) -> float:
        """Median round trip of a command that does nothing: the IPC and Python cost per call."""
        samples = []
        for _ in range(n):
            t0 = time.perf_counter()
            self._ok(self.link.request({"cmd": "ping"}), "crash")
            samples.append((time.perf_counter() - t0) * 1e3)
        return sorted(samples)[len(samples) // 2]

    def _ok(self, reply: dict[str, Any], check: str, prefix: str = "") -> None:
        if reply.get("ok") is not True:
            # The candidate process names the run-time guard's verdict; nothing else it says is a check.
            named = reply.get("check") if reply.get("check") in NAMED_BY_CANDIDATE_PROCESS else check
            raise Rejected(self.link.stage, f"{prefix}{str(reply.get('error'))[:500]}", named)

    def _sync(self) -> None:
        if self.device == "cuda":
            torch.cuda.synchronize()

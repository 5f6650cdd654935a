"""The candidate process: imports only the candidate, runs forwards on inputs the judge hands it.

    python -P -m kernelskill.eval.candidate_proc      (fd 0: a Unix socket to the judge)

It never sees the signing key, the problem's module or source, the reference model or its
outputs: the judge sends the weight seed, get_init_inputs()'s values, handles to input buffers
and to output slots, and one command per forward. Per forward it replies with a description of
what forward returned (eval/contract.py), its own timing and the Triton kernels it saw, after
copying the output tensors into the judge's slots. Everything here runs beside candidate code and
is therefore untrusted by the judge: the judge checks values it copied itself and bounds the
reported times by its own wall clock.
"""

from __future__ import annotations

import socket
import sys
import time
from pathlib import Path
from typing import Any

import torch

from . import audit, integrity, kernels, poison, wire
from . import precision as P
from .contract import describe, tensor_leaves
from .harness import seeded
from .problem import CandidateError, load_candidate
from .timing import FLUSH_BYTES, touch_pages
from .warm_imports import WARM_FLAG, WarmImports, modules_for


def _one_line(e: BaseException) -> str:
    msg = " ".join(str(e).split())
    return f"{type(e).__name__}: {msg[:400]}"


class Candidate:
    """The candidate's side of the protocol: one method per command."""

    def __init__(self, sock: socket.socket, warm: WarmImports | None = None):
        self.sock = sock
        self.warm = warm
        """torch.compile's stack importing in the background (the baseline process: WARM_FLAG)."""
        self.sets: dict[int, list[Any]] = {}
        self.slots: list[torch.Tensor] = []
        self.seen: set[tuple[str, str]] = set()
        self.model: torch.nn.Module | None = None
        self.flush: torch.Tensor | None = None
        self.reference = False

    def ping(self, msg: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        return {"ok": True}

    def init(self, msg: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        if self.warm is not None:  # no import may run beside the guard (filelock adds an audit hook)
            self.warm.wait()
        self.device, self.policy = msg["device"], P.policy(msg["precision"])
        self.reference = msg.get("reference") is True  # the baseline process (eval/baselines.py)
        self.cuda = self.device == "cuda"
        if self.cuda:
            torch.cuda.set_device(0)
            self.flush = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda")
        # Candidate code runs only inside the guard (eval/audit.py: no programs, sockets, writes
        # outside scratch and the compile caches, frame or gc walks); the tools this process times
        # and copies with are snapshotted first and checked as each guarded stretch ends.
        self.integrity = integrity.Integrity()
        scratch = Path.cwd()
        self.guard = audit.Guard(scratch, msg["filename"], worker_dir=scratch.parent,
                                 problem_file=msg.get("problem_file"), after=self.integrity.verify_quick)
        try:
            with self.guard:
                self.module = load_candidate(msg["source"], msg["filename"])
        except CandidateError as e:
            return {"ok": False, "stage": "load", "error": str(e)}
        self.integrity.verify("the candidate's import")
        try:
            seeded(msg["weight_seed"])
            with self.guard, poison.poisoned():
                model = self.module.ModelNew(*msg["init_values"])
                self.model = model.to(self.device)
        except Exception as e:
            return {"ok": False, "stage": "compile", "error": f"ModelNew(*get_init_inputs()) failed: "
                                                              f"{_one_line(e)}"}
        self.integrity.verify("the candidate's construction")
        return {"ok": True, "params": [list(p.shape) for p in self.model.parameters()]}

    def set_inputs(self, msg: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        self.sets[msg["set"]] = [wire.open_shared(v, fds) if kind == "tensor" else v
                                 for kind, v in msg["items"]]
        return {"ok": True}

    def set_slots(self, msg: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        self.slots = [wire.open_shared(spec, fds) for spec in msg["specs"]]
        return {"ok": True}

    def run(self, msg: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        inputs = self.sets[msg["set"]]
        try:
            with torch.no_grad(), P.applied(self.policy), self.guard:
                out, ms, idle_ms = (self._timed if msg["mode"] == "timed" else self._trial)(
                    inputs, msg["poison"])
            desc = describe(out, inputs)
            self._to_slots(out)
        except Exception as e:
            return {"ok": False, "error": _one_line(e)}
        return {"ok": True, "ms": ms, "idle_ms": idle_ms, "out": desc,
                "kernels": kernels.own_kernels(self.seen, self.module.__name__)}

    def compile(self, msg: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        """torch.compile of the model replaces it, in the baseline process only (its model is the
        reference, trusted like the judge's: eval/baselines.py). torch.compile (which imports its
        stack) and its compiling first call run outside the guard, which refuses what they do (on
        an H200 host filelock, imported with torch.compile's stack, adds an audit hook); the timed
        runs after it are guarded as the eager ones were."""
        if not self.reference:
            return {"ok": False, "error": "compile is for the baseline process, whose model is the reference"}
        try:
            self.model = torch.compile(self.model)
            if 0 in self.sets:
                with torch.no_grad(), P.applied(self.policy):
                    self.model(*self.sets[0])
                self._sync()
        except Exception as e:
            return {"ok": False, "error": _one_line(e)}
        return {"ok": True}

    def breakdown(self, msg: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        from .timing_stage import kernel_breakdown
        with self.guard:
            rows = kernel_breakdown(self.model, self.sets[msg["set"]], self.policy)
        return {"ok": True, "rows": rows}

    # ---- forwards ----------------------------------------------------------------------------
    def _trial(self, inputs: list[Any], poison_bytes: int) -> tuple[Any, float, float]:
        """A correctness forward: every empty* tensor and the allocator's free blocks are NaN."""
        if self.cuda:
            poison.poison_cuda_allocator(poison_bytes)
        t0 = time.perf_counter()
        with kernels.recording() as seen, poison.poisoned():
            out = self.model(*inputs)
            self._sync()
        self.seen |= seen
        ms = (time.perf_counter() - t0) * 1e3
        return out, ms, ms

    def _timed(self, inputs: list[Any], poison_bytes: int) -> tuple[Any, float, float]:
        """A timed forward: poisoned allocator, inputs' pages touched, L2 flushed, device idle,
        CUDA events around it (timing.Timer's protocol). Returns (output, event ms, idle ms): the
        host's clock from the start event until every stream of the device is idle again, which
        work the events do not see (another stream, left running at the end event) lengthens."""
        if not self.cuda:
            t0 = time.perf_counter()
            out = self.model(*inputs)
            ms = (time.perf_counter() - t0) * 1e3
            return out, ms, ms
        poison.poison_cuda_allocator(poison_bytes)
        touch_pages(inputs)
        self.flush.zero_()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.perf_counter()
        start.record()
        out = self.model(*inputs)
        end.record()
        torch.cuda.synchronize()
        idle_ms = (time.perf_counter() - t0) * 1e3
        return out, start.elapsed_time(end), idle_ms

    def _to_slots(self, out: Any) -> None:
        """Copy the output tensors into the judge's slots when they fit; when they do not, the
        description already tells the judge why, and the slots keep the judge's poison."""
        leaves = tensor_leaves(out)
        if len(leaves) != len(self.slots) or any(
                type(t) is not torch.Tensor or t.shape != s.shape or t.dtype != s.dtype
                or t.device != s.device for t, s in zip(leaves, self.slots, strict=True)):
            return
        for t, s in zip(leaves, self.slots, strict=True):
            s.copy_(t)
        self._sync()

    def _sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()


COMMANDS = {"ping": Candidate.ping, "init": Candidate.init, "inputs": Candidate.set_inputs,
            "slots": Candidate.set_slots, "run": Candidate.run, "breakdown": Candidate.breakdown,
            "compile": Candidate.compile}


def serve(cand: Candidate) -> None:
    """The command loop. Candidate code (its import, construction and forwards) runs only inside
    this loop: this is the one place to wrap in a run-time guard (eval/audit.py)."""
    while True:
        try:
            msg, fds = wire.recv_from_judge(cand.sock)
        except wire.LinkClosed:
            return
        if msg["cmd"] == "bye":
            return
        try:
            reply = COMMANDS[msg["cmd"]](cand, msg, fds)
        except audit.Violation as v:  # raised past the candidate's own except clauses
            reply = {"ok": False, "stage": "compile", "error": str(v)[:500], "check": v.check}
        for fd in fds:
            socket.close(fd)
        wire.send_to_judge(cand.sock, reply)


def main() -> int:
    sock = socket.socket(fileno=0)  # the judge's end of a socketpair is our stdin
    # The baseline process (eval/baselines.py) starts torch.compile's imports at once: they take
    # seconds, and the judge asks for the baselines only after judging the candidate.
    warm = WarmImports(modules_for("cuda", timing=True, baselines=True)) if WARM_FLAG in sys.argv else None
    serve(Candidate(sock, warm))
    return 0


if __name__ == "__main__":
    sys.exit(main())

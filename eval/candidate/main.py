"""The candidate process: imports only the candidate, runs forwards on inputs the judge hands it.

    python -P -m kernelskill.eval.candidate.main      (fd 0: a Unix socket to the judge)

It never sees the signing key, the problem's module or source, the reference model or its
outputs: the judge sends the weight seed, get_init_inputs()'s values, handles to input buffers
and to output slots, and one command per forward. Per forward it replies with a description of
what forward returned (eval/candidate/contract.py), its own timing and the Triton kernels it saw, after
copying the output tensors into the judge's slots. Every forward is the same command, run the same
way (`_forward`), whether the judge will check it, time it or both; a "null" command runs that
protocol around a forward that does nothing. Everything here runs beside candidate code and is
therefore untrusted by the judge: the judge checks values it copied itself, measures time by its
own clock (null forwards calibrate it) and counts only kernels its parse of the source finds.
"""

from __future__ import annotations

import contextlib
import socket
import sys
import time
from pathlib import Path
from typing import Any

import torch

from .. import precision as P
from ..harness import seeded
from ..problem import CandidateError, load_candidate
from ..sandbox.env import child_exit
from ..timing.protocol import FLUSH_BYTES, touch_pages
from ..timing.warm_imports import WARM_FLAG, WarmImports, modules_for
from . import audit, integrity, kernel_pin, kernels, poison, tuning_keys, wire
from .contract import describe, tensor_leaves


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
        self._null_out: list[torch.Tensor] | None = None
        """What the null forward returns (`null`): zeros shaped like the slots, made once."""

    def ping(self, msg: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        return {"ok": True}

    def init(self, msg: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        if self.warm is not None:  # no import may run beside the guard (filelock adds an audit hook)
            self.warm.wait()
        self.device, self.policy = msg["device"], P.policy(msg["precision"])
        self.reference = msg.get("reference") is True  # the baseline process (eval/judge/baselines.py)
        self.cuda = self.device == "cuda"
        if self.cuda:
            torch.cuda.set_device(0)
            self.flush = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda")
        # Candidate code runs only inside the guard (eval/candidate/audit.py: no programs, sockets, writes
        # outside scratch and the compile caches, frame or gc walks); the tools this process times
        # and copies with are snapshotted first and checked as each guarded stretch ends.
        poison.install()  # before the snapshot, which then watches the wrapped factories
        self.integrity = integrity.Integrity()
        if not self.reference:  # Triton compiles only the kernels the static checks read
            kernel_pin.install(msg.get("kernel_pins") or kernel_pin.pins(msg["source"]))
            tuning_keys.install()  # carried tuning records found wherever a kernel sits
        scratch = Path.cwd()
        self.guard = audit.Guard(scratch, msg["filename"], worker_dir=scratch.parent,
                                 problem_file=msg.get("problem_file"), after=self.integrity.verify_quick)
        # Every touch of an object the candidate made happens inside the guard (its methods,
        # properties, __str__ are its code); what leaves it is checked to be plain data.
        try:
            self.module = load_candidate(msg["source"], msg["filename"], guard=self.guard)
            with self.guard:
                self.integrity.verify("the candidate's import")
        except CandidateError as e:  # raised by load_candidate with a message it formatted in the guard
            text = e.args[0] if type(e) is CandidateError and len(e.args) == 1 else None
            return {"ok": False, "stage": "load",
                    "error": text if type(text) is str else "the candidate failed to load"}
        except audit.Violation:
            raise
        except BaseException as e:  # noqa: BLE001 (the candidate's own BaseException is its failure)
            return {"ok": False, "stage": "load", "error": f"candidate failed to import: "
                                                           f"{audit.error_line(e, self.guard)}"}
        try:
            seeded(msg["weight_seed"])
            with self.guard, poison.poisoned():
                model = self.module.ModelNew(*msg["init_values"])
                self.model = model.to(self.device)
                params = [[int(d) for d in p.shape] for p in self.model.parameters()]
                self.integrity.verify("the candidate's construction")
        except audit.Violation:
            raise
        except BaseException as e:  # noqa: BLE001
            return {"ok": False, "stage": "compile", "error": f"ModelNew(*get_init_inputs()) failed: "
                                                              f"{audit.error_line(e, self.guard)}"}
        if not all(type(d) is int for p in params for d in p):  # int() of the candidate's may be its own
            return {"ok": False, "stage": "compile", "error": "parameters() gave shapes that are not ints"}
        return {"ok": True, "params": params}

    def settle(self, msg: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        """Reply once this process's background imports are over (the baseline process imports
        torch.compile's stack while the candidate is judged): the judge asks before it times the
        candidate, so that no import shares the host with timed runs (eval/judge/timing_stage.py)."""
        if self.warm is not None:
            self.warm.wait()
        return {"ok": True}

    def sync(self, msg: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        """Reply once the GPU work this process queued is done: a judge asks before pausing it
        beside another candidate's timed runs (eval/judge/gate.py, which checks the GPU is idle)."""
        if getattr(self, "cuda", False):
            torch.cuda.synchronize()
        return {"ok": True}

    def set_inputs(self, msg: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        self.sets[msg["set"]] = [wire.open_shared(v, fds) if kind == "tensor" else v
                                 for kind, v in msg["items"]]
        return {"ok": True}

    def set_slots(self, msg: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        self.slots = [wire.open_shared(spec, fds) for spec in msg["specs"]]
        return {"ok": True}

    def run(self, msg: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        """One forward, the same for every run the judge asks for: the message carries no mode, and
        correctness trials, warm-ups and timed runs get the same poisoning, flush, events, copy and
        synchronisation (`_forward`). The judge decides afterwards which outputs it checks."""
        return self._reply(self.model, self.sets[msg["set"]], msg["poison"])

    def null(self, msg: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        """`run`'s protocol around a forward that returns buffers shaped like the slots and does
        nothing else: the judge's wall clock around it is what a run costs besides the forward
        (eval/judge/remote_timing.py). No candidate code runs in it."""
        if self._null_out is None or len(self._null_out) != len(self.slots):
            self._null_out = [torch.zeros_like(s) for s in self.slots]
        out = self._null_out[0] if len(self._null_out) == 1 else tuple(self._null_out)
        return self._reply(lambda *inputs: out, self.sets[msg["set"]], msg["poison"])

    def _reply(self, model: Any, inputs: list[Any], poison_bytes: int) -> dict[str, Any]:
        try:
            with torch.no_grad(), P.applied(self.policy), self.guard:
                desc, times = self._forward(model, inputs, poison_bytes)
        except poison.ModeLeak as e:  # raised by the evaluator after forward returned
            msg = e.args[0] if type(e) is poison.ModeLeak and type(e.args[0]) is str else "a mode left active"
            return {"ok": False, "error": msg, "check": "deferred_work"}
        except audit.Violation:
            raise
        except BaseException as e:  # noqa: BLE001 (the candidate's own BaseException is its failure)
            return {"ok": False, "error": audit.error_line(e, self.guard)}
        return {"ok": True, **times, "out": desc,
                "kernels": kernels.own_kernels(self.seen, self.module.__name__)}

    def compile(self, msg: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        """torch.compile of the model replaces it, in the baseline process only (its model is the
        reference, trusted like the judge's: eval/judge/baselines.py). torch.compile (which imports its
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
        with self.guard:
            rows = kernels.kernel_breakdown(self.model, self.sets[msg["set"]], self.policy)
        return {"ok": True, "rows": rows}

    # ---- forwards ----------------------------------------------------------------------------
    def _forward(self, model: Any, inputs: list[Any],
                 poison_bytes: int) -> tuple[dict[str, Any], dict[str, float]]:
        """Every run: the allocator poisoned, the inputs' pages touched, L2 flushed, the device idle
        (timing.Timer's protocol), then start mark, forward under layer-1 poisoning, mid mark, the
        output described and copied into the judge's slots, end mark, synchronize. Returns the
        description and {ms: start to mid (the forward, poison fills included), fill_ms: those
        fills, copy_ms: mid to end, idle_ms: host clock from before the start mark until the whole
        device is idle}. The copy is timed because work can be deferred into it (eval/judge/remote_timing.py
        charges what it costs beyond an honest copy); it runs with torch functions disabled, so no
        mode or subclass of the candidate's sees it, and a forward that leaves a mode on the stack
        is rejected (poison.ModeLeak), as is one that finds a mode already there."""
        if poison.mode_depths() != (0, 0):
            raise poison.ModeLeak("a torch function or dispatch mode was active before the forward "
                                  "(left by the candidate's import, construction or a forward)")
        if self.cuda:
            poison.poison_cuda_allocator(poison_bytes)
            touch_pages(inputs)
            self.flush.zero_()
            torch.cuda.synchronize()
        marks = [torch.cuda.Event(enable_timing=True) for _ in range(3)] if self.cuda else []
        fills = poison.FillClock()
        host = [time.perf_counter()]
        if self.cuda:
            marks[0].record()
        # The compiled reference of the baseline process runs unpoisoned: it is the judge's own
        # model, and a torch function mode around it makes dynamo recompile it for the mode.
        layer1 = contextlib.nullcontext() if self.reference and self._compiled() else poison.poisoned(fills)
        with kernels.recording() as seen, layer1:
            out = model(*inputs)
        self.seen |= seen
        if self.cuda:
            marks[1].record()
        host.append(time.perf_counter())
        with torch._C.DisableTorchFunction():
            desc = describe(out, inputs)
            self._to_slots(out)
            del out
        if self.cuda:
            marks[2].record()
        host.append(time.perf_counter())
        self._sync()
        idle_ms = (time.perf_counter() - host[0]) * 1e3
        if self.cuda:
            ms, copy_ms = marks[0].elapsed_time(marks[1]), marks[1].elapsed_time(marks[2])
        else:
            ms, copy_ms = (host[1] - host[0]) * 1e3, (host[2] - host[1]) * 1e3
        return desc, {"ms": ms, "fill_ms": fills.ms(), "copy_ms": copy_ms, "idle_ms": idle_ms}

    def _compiled(self) -> bool:
        return type(self.model).__name__ == "OptimizedModule"

    def _to_slots(self, out: Any) -> None:
        """Copy the output tensors into the judge's slots when they fit; when they do not, the
        description already tells the judge why, and the slots keep the judge's poison. The caller
        synchronises (and on a GPU times the copy with events)."""
        leaves = tensor_leaves(out)
        if len(leaves) != len(self.slots) or any(
                type(t) is not torch.Tensor or t.shape != s.shape or t.dtype != s.dtype
                or t.device != s.device for t, s in zip(leaves, self.slots, strict=True)):
            return
        for t, s in zip(leaves, self.slots, strict=True):
            s.copy_(t)

    def _sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()


COMMANDS = {"ping": Candidate.ping, "settle": Candidate.settle, "init": Candidate.init,
            "inputs": Candidate.set_inputs, "slots": Candidate.set_slots, "run": Candidate.run,
            "null": Candidate.null, "breakdown": Candidate.breakdown, "compile": Candidate.compile,
            "sync": Candidate.sync}


def serve(cand: Candidate) -> None:
    """The command loop. Candidate code (its import, construction and forwards) runs only inside
    this loop: this is the one place to wrap in a run-time guard (eval/candidate/audit.py)."""
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
        except BaseException as e:  # noqa: BLE001 - whatever the candidate raised, formatted guarded
            reply = {"ok": False, "error": audit.error_line(e, cand.guard) if hasattr(cand, "guard")
                     else type(e).__name__}
        for fd in fds:
            socket.close(fd)
        wire.send_to_judge(cand.sock, reply)


def main() -> int:
    sock = socket.socket(fileno=0)  # the judge's end of a socketpair is our stdin
    # The baseline process (eval/judge/baselines.py) starts torch.compile's imports at once: they take
    # seconds, and the judge asks for the baselines only after judging the candidate.
    warm = WarmImports(modules_for("cuda", timing=True, baselines=True)) if WARM_FLAG in sys.argv else None
    serve(Candidate(sock, warm))
    return 0


if __name__ == "__main__":
    # No interpreter teardown: __del__, atexit and printing an uncaught exception would run
    # candidate code outside the guard (sandbox.env.child_exit).
    child_exit(main())

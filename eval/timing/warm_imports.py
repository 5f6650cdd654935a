"""torch.compile's stack imported in the background while the judge waits on the candidate.

`import torch._dynamo` (which the FLOP counter of the timing stage pulls in on first use) and
Inductor take seconds (measured on an H200 host: the timing stage's FLOP count 4-6 s and the
torch.compile baseline 4.5-9 s per evaluation, most of it these imports). The judge spends as
long again blocked on the candidate process (its start, import, first compile), with the GIL
released: importing there costs the evaluation little. The timing stage waits for the thread
before its first timed run (eval/judge/timing_stage.py), so no import competes for the GIL with the timed
runs, whose wall clock bounds the candidate's reported time. It still competes with the
correctness stage, whose every wait on the device or the candidate ends with taking the GIL
back from this thread: after CPython's switch interval, 5 ms by default. A comparison that read each
chunk's statistics back one by one spent 1-7 s of an evaluation there on an H200 (2026-12-02,
problems/measurements/h200-2026-12-02-comparison/; eval/judge/compare.py now reads a leaf once), so the
interval is cut while the imports run.
"""

from __future__ import annotations

import importlib
import sys
import threading

WARM_FLAG = "--warm-compile"
"""candidate_proc's argument: import torch.compile's stack in the background from the start (the
baseline process, eval/judge/baselines.py, where torch.compile of the reference is timed)."""
# Rationale: short enough that the main thread's hundreds of waits per evaluation cost
# milliseconds in all, long enough that the importing thread is not switched out every bytecode.
SWITCH_INTERVAL_S = 2e-4
_importers = 0
"""Importing threads alive in this process."""
_restore_to = 0.0
"""The switch interval before the first of them started, restored when the last one ends."""
_lock = threading.Lock()


class WarmImports:
    def __init__(self, modules: tuple[str, ...]):
        self.modules = modules
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="warm-imports", daemon=True)
        if modules:
            self._thread.start()

    def _run(self) -> None:
        _shorten_switches(True)
        try:
            for name in self.modules:
                importlib.import_module(name)
        except BaseException as e:  # the caller's own import then raises where it matters
            self.error = e
        finally:
            _shorten_switches(False)

    def wait(self) -> None:
        """Block until the background imports are done (a failed one is retried by the caller's
        own import, which then raises in the stage that needs it)."""
        if self.modules:  # the thread was started
            self._thread.join()


def _shorten_switches(start: bool) -> None:
    """The first importing thread shortens the interval, the last one to end restores it."""
    global _importers, _restore_to
    with _lock:
        if start:
            if _importers == 0:
                _restore_to = sys.getswitchinterval()
                sys.setswitchinterval(min(_restore_to, SWITCH_INTERVAL_S))
            _importers += 1
        else:
            _importers -= 1
            if _importers == 0:
                sys.setswitchinterval(_restore_to)


def modules_for(device: str, timing: bool, baselines: bool) -> tuple[str, ...]:
    """Pure: what this evaluation's timing stage will import: dynamo and Inductor for the
    torch.compile baseline (timed on a GPU only). The FLOP count needs neither
    (roofline.count_work)."""
    if timing and device == "cuda" and baselines:
        return ("torch._dynamo", "torch._inductor.compile_fx")
    return ()

"""torch.compile's stack imported in the background while the judge waits on the candidate.

`import torch._dynamo` (which the FLOP counter of the timing stage pulls in on first use) and
Inductor take seconds (measured on an H200 host: the timing stage's FLOP count 4-6 s and the
torch.compile baseline 4.5-9 s per evaluation, most of it these imports). The judge spends as
long again blocked on the candidate process (its start, import, first compile), with the GIL
released: importing there costs the evaluation little. The timing stage waits for the thread
before its first timed run (timing_stage.py), so no import competes for the GIL with the timed
runs, whose wall clock bounds the candidate's reported time. It still competes with the
correctness stage's comparisons (measured on an H200: they take 1-3 s longer), which costs less
than waiting for the imports there (3-6 s idle, session 28).
"""

from __future__ import annotations

import importlib
import threading


class WarmImports:
    def __init__(self, modules: tuple[str, ...]):
        self.modules = modules
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="warm-imports", daemon=True)
        if modules:
            self._thread.start()

    def _run(self) -> None:
        try:
            for name in self.modules:
                importlib.import_module(name)
        except BaseException as e:  # the caller's own import then raises where it matters
            self.error = e

    def wait(self) -> None:
        """Block until the background imports are done (a failed one is retried by the caller's
        own import, which then raises in the stage that needs it)."""
        if self.modules:  # the thread was started
            self._thread.join()


def modules_for(device: str, timing: bool, baselines: bool, counts_work: bool = True) -> tuple[str, ...]:
    """Pure: what this evaluation's timing stage will import: dynamo for the FLOP count (unless an
    earlier evaluation's count is handed in), Inductor for the torch.compile baseline (timed on
    a GPU only)."""
    if not timing:
        return ()
    if device == "cuda" and baselines:
        return ("torch._dynamo", "torch._inductor.compile_fx")
    return ("torch._dynamo",) if counts_work else ()

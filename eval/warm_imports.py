"""torch.compile's stack imported in the background while the judge waits on the candidate.

`import torch._dynamo` (which the FLOP counter of the timing stage pulls in on first use) and
Inductor take seconds (measured on an H200 host: the timing stage's FLOP count 4-6 s and the
torch.compile baseline 4.5-9 s per evaluation, most of it these imports). The judge spends as
long again blocked on the candidate process (its start, import, first compile), with the GIL
released: importing there costs the evaluation nothing. Whoever needs the modules first calls
`wait()`; the thread imports nothing the judge's own stages use before that point.
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
        if self._thread.is_alive() or self._thread.ident is not None:
            self._thread.join()


def for_evaluation(device: str, timing: bool, baselines: bool) -> WarmImports:
    """What this evaluation's timing stage will import: dynamo for the FLOP count, Inductor for
    the torch.compile baseline (timed on a GPU only)."""
    if not timing:
        return WarmImports(())
    if device == "cuda" and baselines:
        return WarmImports(("torch._dynamo", "torch._inductor.compile_fx"))
    return WarmImports(("torch._dynamo",))

"""Integrity of the judge's tools: what the evaluator calls is still what it was before the candidate ran.

A Python 3.11 write to a class or module attribute is no audit event, so `torch.cuda.synchronize = f`
or `torch.Tensor.allclose = f` done through a path the static checks missed would go unseen by the
audit hook. `Integrity()` snapshots, before the candidate is imported, the identity (and, for Python
functions, the code, defaults and keyword defaults) of:
- QUICK: the clock and synchronisation points of the timing loop, checked at the end of every guarded
  call, before the timer reads its clock;
- the whole dictionaries of the modules and classes the judge uses (builtins, time, torch, torch.cuda,
  torch.nn.functional, torch.Tensor, torch.nn.Module, torch.cuda.Event, every loaded kernelskill.eval
  module) and the sys.modules entries of the evaluator, checked at stage ends by `verify(where)`.
A class that gains an attribute counts (a patched inherited method lands as a new key); a module that
gains one does not (torch loads submodules lazily), nor does torch's own wrapper of an original
(`_torch_wrapper`). A change raises audit.Violation('integrity').
"""

from __future__ import annotations

import builtins
import sys
import time
import types
from typing import Any

import torch

from .audit import Violation

EVALUATOR = __package__.rpartition(".")[0]  # kernelskill.eval, above this folder


def _quick() -> dict[str, Any]:
    ev = torch.cuda.Event
    return {"time.perf_counter": (time, "perf_counter"), "time.time": (time, "time"),
            "time.monotonic": (time, "monotonic"), "torch.cuda.synchronize": (torch.cuda, "synchronize"),
            "torch.cuda.current_stream": (torch.cuda, "current_stream"),
            "torch.cuda.Event": (torch.cuda, "Event"),
            "Event.record": (ev, "record"), "Event.elapsed_time": (ev, "elapsed_time"),
            "Event.synchronize": (ev, "synchronize"), "torch.equal": (torch, "equal"),
            "torch.isfinite": (torch, "isfinite"), "torch.allclose": (torch, "allclose")}


def _fingerprint(value: Any) -> tuple[Any, ...]:
    # Exact types only: isinstance() reads a candidate object's __class__, which may be its code.
    if type(value) is types.FunctionType:
        return (id(value), value.__code__, value.__defaults__, value.__kwdefaults__)
    return (id(value),)


def _namespaces() -> dict[str, tuple[Any, bool]]:
    """name -> (object whose __dict__ is watched, whether new keys count)."""
    spaces: dict[str, tuple[Any, bool]] = {
        "builtins": (builtins, False), "time": (time, False), "torch": (torch, False),
        "torch.cuda": (torch.cuda, False), "torch.nn.functional": (torch.nn.functional, False),
        "torch.Tensor": (torch.Tensor, True), "torch.nn.Module": (torch.nn.Module, True),
        "torch.cuda.Event": (torch.cuda.Event, True)}
    for name, mod in list(sys.modules.items()):
        if name.startswith(EVALUATOR + ".") and isinstance(mod, types.ModuleType):
            spaces[name] = (mod, False)
    return spaces


def _torch_wrapper(new: Any, old: Any) -> bool:
    """torch's own wrapper of the original: importing torch._dynamo replaces torch.manual_seed with
    a dynamo-disabled functools.wraps of it. A candidate's wrapper has the candidate's __module__."""
    if type(new) is not types.FunctionType:  # functools.wraps makes a plain function
        return False
    module = new.__module__
    return new.__dict__.get("__wrapped__") is old and type(module) is str and module.startswith("torch.")


class Integrity:
    """A snapshot of the judge's tools; `verify` and `verify_quick` compare against it."""

    def __init__(self) -> None:
        self.quick_refs = _quick()
        self.quick_objs = {k: getattr(o, a) for k, (o, a) in self.quick_refs.items()}
        self.quick = {k: _fingerprint(v) for k, v in self.quick_objs.items()}
        # The live dicts (a class's mappingproxy follows its writes): lookups, not getattr chains.
        self.quick_live = [(k, vars(o), a, self.quick_objs[k]) for k, (o, a) in self.quick_refs.items()]
        self.spaces = _namespaces()
        self.dicts = {k: {n: (_fingerprint(v), v) for n, v in list(vars(o).items())}
                      for k, (o, _) in self.spaces.items()}
        self.modules = {n: id(m) for n, m in list(sys.modules.items())
                        if n.startswith(EVALUATOR + ".") or n in ("torch", "time", "builtins")}

    def changes(self) -> list[str]:
        """Names of what changed, empty when nothing did."""
        out = [k for k, (o, a) in _quick().items() if _fingerprint(getattr(o, a, None)) != self.quick[k]]
        for k, (o, new_keys) in self.spaces.items():
            now, then = vars(o), self.dicts[k]
            # Private names are torch's own lazily filled caches (torch.cuda._cached_device_count is
            # set by the first CUDA call, seen on an H200); a candidate cannot name them (the
            # static allowlist rejects `_` segments).
            out += [f"{k}.{n}" for n, (fp, old) in then.items() if not n.startswith("_") and (
                    n not in now or (_fingerprint(now[n]) != fp and not _torch_wrapper(now[n], old)))]
            # A key of the candidate's own str type would run its __eq__ / __hash__ / __format__ here.
            keys = list(now)
            out += [f"{k}.<a key that is not a str>" for n in keys if type(n) is not str]
            if new_keys:
                out += [f"{k}.{n} (added)" for n in keys if type(n) is str and n not in then
                        and not n.startswith("_")]
        out += [f"sys.modules[{n!r}]" for n, i in self.modules.items() if id(sys.modules.get(n)) != i]
        return out

    def verify_quick(self) -> None:
        """Identity only (no code reads): this runs inside every timed call."""
        for _, d, a, obj in self.quick_live:
            if d.get(a) is not obj:
                break
        else:
            return
        bad = [k for k, d, a, obj in self.quick_live if d.get(a) is not obj]
        if bad:
            raise Violation("integrity", f"integrity: the candidate replaced {', '.join(bad[:3])}")

    def verify(self, where: str) -> None:
        bad = self.changes()
        if bad:
            more = f" and {len(bad) - 3} more" if len(bad) > 3 else ""
            raise Violation("integrity", f"integrity: after {where}, {', '.join(bad[:3])}{more} changed")

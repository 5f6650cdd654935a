"""Building models and inputs the same way for reference, candidate and baselines."""

from __future__ import annotations

import contextlib
import copy
import math
import secrets
from collections.abc import Callable
from typing import Any

import torch

from .problem import LoadedProblem


def secret_seed() -> int:
    """A seed from the OS's random source: nothing in the options or the candidate's reach
    predicts it (issue 22: fixed seeds let a candidate regenerate its inputs)."""
    return secrets.randbits(62)


def seeded(seed: int) -> None:
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


def to_device(obj: Any, device: str) -> Any:
    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_device(o, device) for o in obj)
    if isinstance(obj, dict):
        return {k: to_device(v, device) for k, v in obj.items()}
    return obj


def clone(obj: Any) -> Any:
    if isinstance(obj, torch.Tensor):
        return obj.clone()
    if isinstance(obj, (list, tuple)):
        return type(obj)(clone(o) for o in obj)
    if isinstance(obj, dict):
        return {k: clone(v) for k, v in obj.items()}
    return obj


def to_double(obj: Any) -> Any:
    if isinstance(obj, torch.Tensor):
        return obj.double() if obj.is_floating_point() else obj
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_double(o) for o in obj)
    if isinstance(obj, dict):
        return {k: to_double(v) for k, v in obj.items()}
    return obj


def double_clone(obj: Any, device: str | None = None) -> Any:
    """A float64 copy of every floating tensor and a copy of the rest (the reference may mutate
    them), on `device` if given: one copy per tensor, where to_double(clone(x)) made two."""
    if isinstance(obj, torch.Tensor):
        dtype = torch.float64 if obj.is_floating_point() else obj.dtype
        return obj.detach().to(device=device or obj.device, dtype=dtype, copy=True)
    if isinstance(obj, (list, tuple)):
        return type(obj)(double_clone(o, device) for o in obj)
    if isinstance(obj, dict):
        return {k: double_clone(v, device) for k, v in obj.items()}
    return obj


def same_values(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.shape == b.shape and bool(
            torch.equal(a, b) or (a.is_floating_point() and torch.equal(a.isnan(), b.isnan())
                                  and torch.equal(a.nan_to_num(), b.nan_to_num())))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same_values(x, y) for x, y in zip(a, b, strict=True))
    return True


def make_inputs(problem: LoadedProblem, seed: int, device: str,
                perturb: Callable[[torch.Tensor], torch.Tensor] | None = None) -> list[Any]:
    seeded(seed)
    # Generated directly on the device: full-size problems draw ~1e9 random numbers, which
    # takes seconds on a CPU and milliseconds on a GPU. Explicitly placed tensors stay put.
    with torch.device(device):
        inputs = list(problem.get_inputs())
    if perturb is not None:
        inputs = [perturb(x) if isinstance(x, torch.Tensor) and x.is_floating_point() else x
                  for x in inputs]
    return to_device(inputs, device)


def few_negatives(x: torch.Tensor) -> torch.Tensor:
    """`x` with about 1% of its elements (at least one) made negative: inputs that still look
    non-negative to a candidate sampling their statistics, so a cheat that is right only on
    non-negative inputs (abs() for an identity, a skipped ReLU) and switches to an honest path on
    clearly signed inputs fails here."""
    if not x.numel():
        return x
    # A contiguous mask (x may be a strided view) and a clone, so the input keeps its layout.
    flip = torch.rand(x.shape, device=x.device) < 0.01
    flip.view(-1)[int(torch.randint(x.numel(), (1,)))] = True
    # The offset (zeros become negative too) follows the input's own scale: a fixed -0.1 made an
    # outlier 10^17 times the rest of a tensor of magnitude 1e-18, a change of range, not of sign.
    typical = float(x.abs().mean())
    offset = 0.1 * typical if math.isfinite(typical) and typical > 0 else 0.1
    return x.clone().copy_(torch.where(flip, -x.abs() - offset, x))


# Signed and rescaled variants of the inputs: an "identity" ReLU that only passes on
# non-negative inputs, or a kernel that assumes a range, fails on these.
PERTURBATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "randn": lambda x: torch.randn_like(x),
    "affine(x*4-2)": lambda x: x * 4 - 2,
    "few negatives": few_negatives,
}


def build(cls: type, problem: LoadedProblem, seed: int, device: str,
          wrap: contextlib.AbstractContextManager | None = None) -> torch.nn.Module:
    """Seed, construct on the CPU (so the RNG stream matches the reference's), move to device."""
    seeded(seed)
    with wrap or contextlib.nullcontext():
        model = cls(*problem.get_init_inputs())
    return model.to(device)


def double_copy(model: torch.nn.Module) -> torch.nn.Module | None:
    try:
        return copy.deepcopy(model).double()
    except Exception:  # a module that refuses float64 falls back to the fp32 reference
        return None


def param_shapes(model: torch.nn.Module) -> list[tuple[int, ...]]:
    return [tuple(p.shape) for p in model.parameters()]

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


def flatten(out: Any, path: str = "out") -> list[tuple[str, Any]]:
    """Leaves of nested tuples / lists / dicts with a readable path for error messages."""
    if isinstance(out, (tuple, list)):
        return [leaf for i, o in enumerate(out) for leaf in flatten(o, f"{path}[{i}]")]
    if isinstance(out, dict):
        return [leaf for k in sorted(out, key=str) for leaf in flatten(out[k], f"{path}[{k!r}]")]
    return [(path, out)]


def make_inputs(problem: LoadedProblem, seed: int, device: str,
                perturb: Callable[[torch.Tensor], torch.Tensor] | None = None,
                which: int | None = None) -> list[Any]:
    """get_inputs() under `seed`; with `perturb`, applied to input `which` alone (every floating
    tensor input when `which` is None), the others as get_inputs() gives them."""
    seeded(seed)
    # Generated directly on the device: full-size problems draw ~1e9 random numbers, which
    # takes seconds on a CPU and milliseconds on a GPU. Explicitly placed tensors stay put.
    with torch.device(device):
        inputs = list(problem.get_inputs())
    if perturb is not None:
        inputs = [perturb(x) if _is_float(x) and which in (None, i) else x
                  for i, x in enumerate(inputs)]
    return to_device(inputs, device)


def _is_float(x: Any) -> bool:
    return isinstance(x, torch.Tensor) and x.is_floating_point()


def float_inputs(inputs: list[Any]) -> list[int]:
    """Positions of the floating tensor inputs with elements: the ones a perturbation changes."""
    return [i for i, x in enumerate(inputs) if _is_float(x) and x.numel()]


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

# Rationale: one input at a time, so that one input's domain (sqrt of a non-negative input) does
# not hide what another input's perturbation would catch (a dropped ReLU), as perturbing them all
# at once did. Every (perturbation, input) pair up to 9 covers every pair of the problems
# KernelBench has (1 to 3 floating inputs: 3, 6 or 9 forwards on top of the plain trials, where
# perturbing everything at once cost 3). Beyond that each input still gets at least one
# perturbation, rotating through the kinds so that neighbours get different ones.
MAX_PERTURBED = 9


def perturbation_plan(floats: list[int]) -> list[tuple[str, int]]:
    """(perturbation, input position) of each perturbed trial, for the floating inputs `floats`."""
    kinds = list(PERTURBATIONS)
    pairs = [(kinds[(j + r) % len(kinds)], i) for r in range(len(kinds))
             for j, i in enumerate(floats)]
    return pairs[:max(MAX_PERTURBED, len(floats))]


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

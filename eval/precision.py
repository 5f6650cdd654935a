"""Precision policies: one set of flags for the candidate, its yardstick and the baselines.

A policy names which fp32 work may run in TF32. The evaluator runs the candidate, PyTorch's fp32
yardstick (the error-multiple rule's reference error) and the eager / torch.compile baselines
under the same flags, so a solution is never judged against a more accurate (or slower)
reference than the one it is timed against.

- `default`: PyTorch's own defaults, what a user gets: IEEE fp32 matmuls, TF32 cuDNN convolutions.
- `strict`: IEEE fp32 everywhere, baselines included.
- `tf32`: TF32 allowed everywhere, baselines included (`--allow-tf32` is its old name).

Standard library only at import time (torch is imported where flags are set): eval/ runs on bare
GPU hosts and the CLI parses policies without importing torch.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

NAMES = ("default", "strict", "tf32")
DEFAULT = "default"


@dataclass(frozen=True)
class Policy:
    name: str
    matmul_tf32: bool
    """cuBLAS matmuls (and matmul-class Triton dots) may run one-pass TF32."""
    conv_tf32: bool
    """cuDNN convolutions (and convolution kernels) may run one-pass TF32."""

    def flags(self) -> dict[str, bool]:
        """The PyTorch flags this policy sets, as results and reports print them."""
        return {"cuda.matmul.allow_tf32": self.matmul_tf32, "cudnn.allow_tf32": self.conv_tf32}

    @property
    def any_tf32(self) -> bool:
        return self.matmul_tf32 or self.conv_tf32


POLICIES = {
    "default": Policy("default", matmul_tf32=False, conv_tf32=True),
    "strict": Policy("strict", matmul_tf32=False, conv_tf32=False),
    "tf32": Policy("tf32", matmul_tf32=True, conv_tf32=True),
}


def policy(name: str | None) -> Policy:
    """The named policy; None is the default. An unknown name is a ValueError with the choices."""
    try:
        return POLICIES[name or DEFAULT]
    except KeyError:
        raise ValueError(f"unknown precision policy {name!r}; choose one of {', '.join(NAMES)}") from None


def resolve(precision: str | None, allow_tf32: bool | None = None) -> str | None:
    """`--precision` with `--allow-tf32` as an alias of `tf32`; None when neither was given.
    Both given and disagreeing is a ValueError (never silently one of them)."""
    if allow_tf32:
        if precision not in (None, "tf32"):
            raise ValueError(f"--allow-tf32 means --precision tf32, not {precision}")
        return "tf32"
    return precision


@contextlib.contextmanager
def applied(p: Policy) -> Iterator[None]:
    """Run the block under the policy's flags, restoring the caller's afterwards."""
    import torch

    prev = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = p.matmul_tf32
    torch.backends.cudnn.allow_tf32 = p.conv_tf32
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = prev

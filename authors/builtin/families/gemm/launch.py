"""A GEMM launcher as data: `GemmLaunch` names the launcher's kernels (in runtime/gemm.py's
_gemm_slots order), its operands and scalars, the output's dtype and the constant configuration
the runtime planner reads (`_gemm_planner`: path, preparation, split-K, grids and arguments from
metadata); `render` writes the launcher, whose body is one call of runtime gemm._gemm_run (plan
lookup, views, allocations, preparation passes and launches).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

# Keys of GemmTemplate.emit's kernel names in runtime _gemm_slots order: each tiled kernel, then its
# three-dot twins (prep 1, 2, 3); the split-K reduction; the CUDA-core kernels (rows, cols on C^T).
SLOTS = ("main", "main_prep", "main_prepb", "main_prept", "part", "part_prep", "part_prepb", "part_prept",
         "reduce", "rows", "cols")


@dataclass(frozen=True)
class GemmLaunch:
    """One GEMM launcher; its parameters are `operands` (a, b, the bias of a linear, the epilogue
    operands), then `scalars` (the epilogue's run-time numbers)."""

    name: str
    kernels: tuple[str, ...]
    operands: tuple[str, ...]
    scalars: tuple[str, ...]
    dtype: str
    """The output's dtype, as generated source (torch.float32)."""
    linear: bool
    fold: bool
    has_bias: bool
    rr: tuple[str, ...]
    """Each epilogue operand's row-dim count constexpr of the kernels (GemmChain.kernel_params)."""
    precision: str
    scales: str
    gemv: bool
    split_k: bool | int
    """Split-K kernels: False, True (the runtime's rule), or a pinned number of K chunks."""

    def render(self) -> str:
        """The launcher making one runtime call, and its plan cache (`{name}.plans`)."""
        ops, scalars = ", ".join(self.operands), ", ".join(self.scalars)
        cfg = (self.linear, self.fold, self.has_bias, self.rr, self.precision, self.scales, self.gemv,
               self.split_k)
        pad = " " * 21
        kernels = textwrap.wrap(f"({', '.join(self.kernels)},),", 104,
                                initial_indent=pad, subsequent_indent=pad + " ")
        return "\n".join([
            f"def {self.name}({', '.join([*self.operands, *self.scalars])}):",
            "    # cfg: linear, fold, bias, epilogue RR constexprs, precision, fp16 scales, gemv, split-K",
            f"    return _gemm_run({self.name}.plans,",
            *kernels,
            f"{pad}[{ops}], [{scalars}], {self.dtype}, {cfg!r})",
            "", "",
            f"{self.name}.plans = {{}}  # launch plans per operand signature (runtime _gemm_planner)"])

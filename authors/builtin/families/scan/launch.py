"""A scan launcher as data: `ScanLaunch` names the two kernels (row and lane), the generated
planner (`{name}_plan`: geometry, chunking, grids and constexprs from metadata), the operands and
how the fused chains' operands follow the input; `render` writes the launcher, whose body is one
call of runtime scan._scan_run (plan lookup, allocations, the launches and their arguments).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ScanLaunch:
    """One scan launcher; its parameters are `operands`: the input x unless a prologue computes it
    (has_x False), then each fused chain's operands (chain_ops of them per chain present)."""

    name: str
    plans: str
    planner: str
    row_kernel: str
    lane_kernel: str
    operands: tuple[str, ...]
    dtype: str
    """The output's dtype, as generated source (torch.float32)."""
    has_x: bool
    chain_ops: tuple[int, ...]

    def render(self) -> str:
        """The plan cache and the launcher making one runtime call."""
        ops = ", ".join(self.operands)
        return "\n".join([f"{self.plans} = {{}}", "", "",
                          f"def {self.name}({ops}):",
                          f"    return _scan_run({self.plans}, {self.planner}, "
                          f"({self.row_kernel}, {self.lane_kernel}), [{ops}], {self.dtype},",
                          f"                     {self.has_x}, {self.chain_ops!r})"])

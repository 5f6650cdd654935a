"""A plane launcher (window or global pooling) as data: `PlaneLaunch` names the kernel, the
runtime planner that holds the grid rule, the argument list and the constexpr variants, and the
planner's constants; `render` writes the launcher, whose body is one call of runtime
pool_plans._cp_run. Nothing of the host logic is generated line by line: it lives in the
runtime modules (pool_plans.py, pool_window.py, pool_global.py), where ruff and tests see it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PlaneLaunch:
    """One plane launcher. Its parameters are the layer attributes (`attrs`, which key the plan
    with the operands' metadata and must be hashable), the source operands a0.. (the input, or
    a prologue's operands) and the epilogue's operands b0..."""

    name: str
    """The launcher's function name; its plan cache is `plans`."""
    plans: str
    kernel: str
    planner: str
    """Runtime planner: planner(attrs, meta operands, n_src, *consts) -> the launch plan."""
    n_src: int
    n_epi: int
    dtype: str
    """The output's dtype, as generated source (torch.float32)."""
    attrs: tuple[str, ...] = ()
    consts: tuple[int | bool, ...] = ()
    """The planner's constants after n_src (the pooled dims, whether a prologue reads the source)."""

    def params(self) -> list[str]:
        return [*self.attrs, *(f"a{i}" for i in range(self.n_src)), *(f"b{i}" for i in range(self.n_epi))]

    def render(self) -> str:
        """The launcher as generated source: the plan cache and a function making one runtime call."""
        def tup(names: list[str]) -> str:
            return f"({', '.join(names)}{',' if len(names) == 1 else ''})"

        srcs = [f"a{i}" for i in range(self.n_src)]
        epis = [f"b{i}" for i in range(self.n_epi)]
        consts = "".join(f", {c!r}" for c in self.consts)
        return "\n".join([f"{self.plans} = {{}}", "", "",
                          f"def {self.name}({', '.join(self.params())}):",
                          f"    return _cp_run({self.plans}, {self.kernel}, {self.planner}, "
                          f"{tup(list(self.attrs))}, {tup(srcs)},",
                          f"                   {tup(epis)}, {self.dtype}{consts})"])


@dataclass(frozen=True)
class DirectConvLaunch:
    """A direct depthwise-convolution launcher (skills/depthwise-conv-direct). Its parameters are
    the source operands a0.. (the input, or a prologue's operands), the weight w, the bias b, the
    layer's stride, padding, dilation and groups, and the epilogue's operands b0..; its body is
    one call of runtime pool_window._dw_run."""

    name: str
    plans: str
    kernel: str
    n_src: int
    n_epi: int
    dtype: str
    """The output's dtype, as generated source (torch.float32)."""
    dims: int
    pro: bool
    """Whether a prologue's operands are the sources (their strides then include the pixel run)."""

    def params(self) -> list[str]:
        return [*(f"a{i}" for i in range(self.n_src)), "w", "b", "stride", "padding", "dilation", "groups",
                *(f"b{i}" for i in range(self.n_epi))]

    def render(self) -> str:
        """The launcher as generated source: the plan cache and a function making one runtime call."""
        def tup(names: list[str]) -> str:
            return f"({', '.join(names)}{',' if len(names) == 1 else ''})"

        srcs = [f"a{i}" for i in range(self.n_src)]
        epis = [f"b{i}" for i in range(self.n_epi)]
        return "\n".join([f"{self.plans} = {{}}", "", "",
                          f"def {self.name}({', '.join(self.params())}):",
                          f"    return _dw_run({self.plans}, {self.kernel},",
                          "                   (stride, padding, dilation, groups),",
                          f"                   {tup(srcs)}, w, b,",
                          f"                   {tup(epis)}, {self.dtype}, {self.dims}, {self.pro})"])

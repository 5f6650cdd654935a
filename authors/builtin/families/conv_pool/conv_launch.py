"""A convolution launcher (implicit GEMM or vendor call + tail) as data: `ConvLaunch` names the
runtime call, the kernel, what the call is parametrised by (the operand-parts planner, the
F.conv*d function) and its literal flags; `render` writes the launcher, whose body is that one
call. The host logic lives in runtime/conv_gemm.py, conv_parts.py and conv_layout.py.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ConvLaunch:
    """One convolution launcher. Its parameters are the forward's (common.conv_attr_args): x, w,
    b, stride, padding, dilation, groups (and output_padding when transposed), then the
    epilogue's operands b0..; it calls run(plans, kernel, how, x, w, b, attributes in
    F.conv*d's order after the bias, epilogue operands, dtype, *consts)."""

    name: str
    """The launcher's function name; its plan cache is `plans` (named after it, so no fresh name
    shifts the numbering of the file's kernels)."""
    plans: str
    run: str
    """The runtime function: _cv_gemm_run, _cv_layout_run or _cv_tail_run."""
    kernel: str
    how: str
    """_cv_gemm_run's operand-parts planner, or the F.conv*d function of _cv_layout_run / _cv_tail_run."""
    transposed: bool
    n_epi: int
    dtype: str
    """The output's dtype, as generated source (torch.float32)."""
    consts: tuple[int | bool, ...] = ()
    """The run's literal flags after the dtype (dims, transposed / channels-last, keep NHWC)."""

    def params(self) -> list[str]:
        attrs = ["stride", "padding", "dilation", "groups"] + (["output_padding"] if self.transposed else [])
        return ["x", "w", "b", *attrs, *(f"b{i}" for i in range(self.n_epi))]

    def attrs(self) -> str:
        """The attributes in F.conv*d's (F.conv_transpose*d's) order after the bias."""
        if self.transposed:
            return "(stride, padding, output_padding, groups, dilation)"
        return "(stride, padding, dilation, groups)"

    def render(self) -> str:
        """The launcher as generated source: the plan cache and a function making one runtime call."""
        epis = [f"b{i}" for i in range(self.n_epi)]
        epi = f"({', '.join(epis)}{',' if len(epis) == 1 else ''})"
        consts = "".join(f", {c!r}" for c in self.consts)
        head = f"    return {self.run}({self.plans}, {self.kernel}, {self.how}, x, w, b, {self.attrs()},"
        return "\n".join([f"{self.plans} = {{}}", "", "", f"def {self.name}({', '.join(self.params())}):",
                          head, f"{' ' * (12 + len(self.run))}{epi}, {self.dtype}{consts})"])

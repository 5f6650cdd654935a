"""Building normalization regions into kernels and launchers (shared by the fused-layer-rms-norm
and two-level-norm-statistics templates).

`parse_norm` reads an op's operands and attributes into a `NormSpec` (None when the op is a
variant we do not generate); `emit_norm` writes the region's launcher and, when fused chains make
them region-specific, its kernels (otherwise the kernels are shared by every norm of the file).
Which kernel runs (rows in registers, strided columns, two-level statistics) is decided at run
time from the actual sizes and strides, so one candidate serves small and full sizes. The launcher
is data (`NormLaunch`): one call of runtime norms._nrm_run, whose planners (one per kind of norm,
taking the norm's parameters) plan the decision and the rest of the launch geometry once per
operand signature.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass

import torch

from ...frontend.ir import Region, Value
from ...runtime import COLLAPSE, NORM_BATCH, NORM_GROUPS, NORMS_RUNTIME
from ...runtime.norms import _nrm_stats_plan
from ...templates.base import EmitContext, Emitted
from ..pointwise.codegen import ChainCode
from . import kernels as S
from .match import NormSpec


class Chains:
    """The region's fused prologue (computes x) and epilogue (applied to the normalized value)
    as ChainCode, spliced into the kernels (kernels.render); the launcher takes their operands."""

    def __init__(self, region: Region):
        self.pro = ChainCode(region.prologue, Value("__nrm_no_anchor__"), "p") if region.prologue else None
        self.epi = ChainCode(region.epilogue, region.anchor.out, "e") if region.epilogue else None

    @property
    def empty(self) -> bool:
        return self.pro is None and self.epi is None

    def _codes(self, with_epi: bool) -> list[ChainCode]:
        return [c for c in (self.pro, self.epi if with_epi else None) if c is not None]

    def render(self, kernel: S.NormKernel, name: str, with_epi: bool = True) -> str:
        """`kernel` with the region's chains spliced in (kernels.render)."""
        plain, const = [], []
        for c in self._codes(with_epi):
            params = c.kernel_params()
            plain += [p for p in params if "constexpr" not in p]
            const += [p for p in params if "constexpr" in p]
        return S.render(kernel, name, self._load(), self._epilogue() if with_epi else None,
                        tuple(plain), tuple(const))

    def _load(self) -> list[str] | None:
        if self.pro is None:
            return None
        body, var = self.pro.kernel_body("0.0", "lin", "mask")
        return [*body, f"v = {var}"]

    def _epilogue(self) -> list[str] | None:
        if self.epi is None:
            return None
        body, var = self.epi.kernel_body("out", "lin", "mask")
        return [*body, f"res = {var}"]

    # ---- launcher side ---------------------------------------------------------------------
    def params(self) -> tuple[list[str], list[str]]:
        """(prologue operand parameters, epilogue operand parameters) of the launcher."""
        pro = [f"pa{i}" for i in range(len(self.pro.ext))] if self.pro else []
        epi = [f"ea{i}" for i in range(len(self.epi.ext))] if self.epi else []
        return pro, epi

    def forward_args(self) -> tuple[list[str], list[str]]:
        return ([v.name for v in self.pro.ext] if self.pro else [],
                [v.name for v in self.epi.ext] if self.epi else [])


def _kernels(ctx: EmitContext, ch: Chains, which: list[str], em: Emitted) -> dict[str, str]:
    """Kernel names; chain-free kernels are shared by all norms of the file (compiled once)."""
    names = {}
    for k in which:
        kernel = S.KERNELS[k]
        if ch.pro is None and (ch.epi is None or not kernel.epilogue):
            names[k] = f"_nrm_{k}_kernel"
            ctx.share(names[k], ch.render(kernel, names[k], kernel.epilogue))
        else:
            names[k] = ctx.name(f"nrm_{k}_kernel")
            em.kernels.append(ch.render(kernel, names[k], kernel.epilogue))
    return names


@dataclass(frozen=True)
class NormLaunch:
    """One norm launcher as data, rendered as a function making one call of runtime
    norms._nrm_run (plan lookup, allocation, the planned path's launches). Its parameters are
    `params`; the operands it hands on are `ops` (x or the prologue's operands, the present
    `roles`, the epilogue's operands): absent weights and statistics are a literal None in every
    call of the forward, so they key no plan."""

    name: str
    plans: str
    planner: str
    """Runtime planner of the norm's kind: _nrm_rows_plan, _nrm_groups_plan or _nrm_batch_plan."""
    kernels: tuple[str, ...]
    params: tuple[str, ...]
    ops: tuple[str, ...]
    dtype: str
    """The output's dtype, as generated source (torch.float32)."""
    roles: tuple[str, ...]
    chains: tuple[int | None, int | None]
    norm: tuple[object, ...]
    """The planner's parameters after the roles (see its signature)."""

    def render(self) -> str:
        """The plan cache and the launcher."""
        return "\n".join([f"{self.plans} = {{}}", "", "",
                          f"def {self.name}({', '.join(self.params)}):",
                          f"    return _nrm_run({self.plans}, {self.planner}, ({', '.join(self.kernels)}),",
                          f"                    [{', '.join(self.ops)}], {self.dtype}, {self.roles!r}, "
                          f"{self.chains!r}, {self.norm!r})"])


def _launcher(spec: NormSpec, ch: Chains, k: dict[str, str], names: tuple[str, str],
            extra: dict[str, Value | str | None], dtype: torch.dtype, keep_nhwc: bool,
            stats: dict[str, int]) -> NormLaunch:
    """The launcher of `spec` with kernels `k` (names: the launcher's and its plan cache's)."""
    pro, epi = ch.params()
    first = pro if ch.pro else ["x"]
    roles = tuple(r for r, v in extra.items() if v is not None)
    chains = (len(pro) if ch.pro else None, len(epi) if ch.epi else None)
    planner, norm = _planner(spec, keep_nhwc, stats)
    return NormLaunch(names[0], names[1], planner, tuple(k.values()), (*first, *extra, *epi),
                      (*first, *roles, *epi), str(dtype), roles, chains, norm)


_STATS_DEFAULTS = {k: p.default for k, p in inspect.signature(_nrm_stats_plan).parameters.items()
                   if k in ("tile", "programs")}
"""The two-level statistics plan's settings a skill variant may change, with their defaults
(read from runtime/norms.py's _nrm_stats_plan, which keeps them)."""


def _stats_settings(stats: Mapping[str, int] | None) -> dict[str, int]:
    """The statistics plan settings (`tile`, `programs` of runtime _nrm_stats_plan) that differ
    from the runtime's defaults, checked: a variant equal to the defaults emits the default's
    source, so it is never tried as a move."""
    out = {}
    for key, value in sorted((stats or {}).items()):
        if key not in _STATS_DEFAULTS:
            raise ValueError(f"unknown norm statistics setting {key!r} (known: {sorted(_STATS_DEFAULTS)})")
        v = int(value)
        # The plan's blocks are powers of two filling the tile, up to 64 channels side by side.
        if key == "tile" and (v < 64 or v & (v - 1)):
            raise ValueError(f"norm statistics tile {value!r} is not a power of two >= 64")
        if v < 1:
            raise ValueError(f"norm statistics {key} {value!r} is not positive")
        if v != _STATS_DEFAULTS[key]:
            out[key] = v
    return out


def _planner(spec: NormSpec, keep_nhwc: bool = False,
             stats: dict[str, int] | None = None) -> tuple[str, tuple[object, ...]]:
    """The runtime planner of the norm's kind and its parameters; `stats` (non-default statistics
    plan settings) is appended only where the norm takes two-level statistics, so the default
    source is unchanged and a variant changes only the norms it acts on."""
    if spec.kind == "batch_norm":
        tail = (stats,) if stats and spec.training else ()
        return "_nrm_batch_plan", (spec.eps, spec.training, spec.momentum, keep_nhwc, *tail)
    if spec.kind in ("group_norm", "instance_norm"):
        tail = (stats,) if stats else ()
        return "_nrm_groups_plan", (spec.groups if spec.kind == "group_norm" else None, spec.eps, keep_nhwc,
                                    *tail)
    dims = (-spec.reduce_last, None) if spec.dim is None else (spec.dim, spec.dim + 1)
    return "_nrm_rows_plan", (*dims, spec.mode, spec.eps)


def emit_norm(region: Region, ctx: EmitContext, spec: NormSpec, keep_nhwc: bool = False,
              stats: Mapping[str, int] | None = None) -> Emitted:
    """A norm region's launcher and forward line. `keep_nhwc`: every reader of the region's output
    is a convolution converting its input to channels-last (families/conv_pool/layout.py's
    nhwc_readers), so a 4-D / 5-D batch, group or instance norm reading channels-last may write
    channels-last too. `stats`: the two-level statistics plan's `tile` / `programs` (runtime
    _nrm_stats_plan) for a batch (training), group or instance norm; None: the defaults."""
    settings = _stats_settings(stats)
    ctx.share("collapse", COLLAPSE)
    ctx.share("norms_runtime", NORMS_RUNTIME)
    if spec.kind == "batch_norm":
        ctx.share("norm_batch", NORM_BATCH)
    elif spec.kind in ("group_norm", "instance_norm"):
        ctx.share("norm_groups", NORM_GROUPS)
    ch = Chains(region)
    em = Emitted()
    out = region.output()
    extra_outs = [v for v in region.outputs if v.name != out.name]
    if extra_outs:
        raise ValueError(f"norm region would have to produce {extra_outs[0].name} too")
    lname = ctx.name(f"{spec.kind}")
    if spec.kind in ("layer_norm", "rms_norm", "normalize"):
        which = ["row", "col", "stats", "apply"]
        extra = {"w": spec.weight, "b": spec.bias}
    else:
        which = ["row", "stats", "apply"] if spec.kind != "batch_norm" else ["stats", "apply"]
        if spec.x.meta is not None and spec.x.meta.rank in (4, 5):
            # A channels-last input's apply, third from last (runtime _nrm_run's paths 4 and 5).
            which.insert(len(which) - 2, "apply_cl")
        extra = {"w": spec.weight, "b": spec.bias, "rm": spec.running_mean, "rv": spec.running_var,
                 "nbt": spec.nbt, "xb": spec.xbias}
    k = _kernels(ctx, ch, which, em)
    em.helpers.append(_launcher(spec, ch, k, (lname, ctx.name("plans")), extra, out.meta.dtype,
                               keep_nhwc and "apply_cl" in which, settings).render())
    pro, epi = ch.forward_args()
    first = pro if ch.pro else [spec.x.name]
    args = [_arg(v) for v in extra.values()]
    em.lines.append(f"{out.name} = {lname}({', '.join([*first, *args, *epi])})")
    return em


def _arg(v: Value | str | None) -> str:
    """The forward's expression of a launcher argument (a value, or a buffer's expression)."""
    return "None" if v is None else v if isinstance(v, str) else v.name


"""The GEMM template family's shared template class: matching linear / matmul / bmm regions and
emitting the kernel(s) of families/gemm/kernels.py plus a launcher.

Skill folders (gemm-epilogue-fusion, gemm-tf32x3-strict-fp32, gemm-tile-shapes, ...) subclass
`GemmTemplate` and change its configs, precision, or launch strategy (split-K, an FMA path for
matrix-vector shapes); their SKILL.md variants reach the variant hooks below through the
parameters each declares (`params`: precision, tile family, group size, K chunks). Every variant
fuses the region's pointwise epilogue into the store.

Match decides from kinds, ranks and dtypes only; sizes are read by the launcher at run time, so
a candidate captured at SMALL size runs unchanged at full size.
"""

from __future__ import annotations

from dataclasses import replace

from ...frontend.ir import Op, Region
from ...runtime import COLLAPSE, GEMM_PREP, GEMM_RUNTIME
from ...runtime.gemm_prep import _GEMM_SCALE_K as SCALE_K
from ...templates.base import EmitContext, Emitted, Template
from .kernels import GemmChain, KernelOpts, kernel_source, reduce_source
from .launch import SLOTS, GemmLaunch
from .match import (
    DEFAULT_CONFIGS,
    F16_SCALES,
    GEMV_CONFIGS,
    PREP16_CONFIGS,
    PREP_CONFIGS,
    TileLists,
    chain_ok,
    gemm_ok,
    precision,
)

# The three-dot twins of a kernel: (name suffix, kernel name tag, KernelOpts changes) for `prep` 1,
# 2 and 3 of the launch plan (runtime/gemm.py).
_TWINS = (("prep", "3xf16", dict(prep=True, f16=True)),
          ("prepb", "3xtf32_split_a", dict(prep=True, split_a=True)),
          ("prept", "3xtf32_split_a_t", dict(prep=True, split_a=True, swap=True)))


class GemmTemplate(Template):
    kinds = ("linear", "matmul", "bmm")
    supports_epilogue = True
    runtime_scalars = True
    configs = DEFAULT_CONFIGS
    tf32 = True
    """Use one-pass TF32 when the run's policy allows it (strict fp32: tf32x3 always)."""
    rank1 = False
    """Accept matrix-vector forms (a rank-1 operand)."""
    split_k = True
    """Split K at run time when the output has fewer tiles than ~two waves of SMs and K is long
    (gemm-split-k's rule): the choice needs full sizes, which only the launcher sees."""
    prep_configs = PREP_CONFIGS
    """Tile configurations of the kernels with one side prepared as TF32 parts (runtime/gemm_prep.py)."""
    prep16_configs = PREP16_CONFIGS
    """Tile configurations of the kernel on both operands prepared as fp16 parts."""
    small_dim = True
    """Route M or N <= SMALL_DIM (a column vector, a few rows) to a CUDA-core FMA kernel at run
    time: a tensor-core tile is >= 16 wide, so there it would be mostly padding."""
    fold = True
    """Fold A's batch into M when B is one matrix (off when the kernel needs per-matrix rows)."""
    params = {"input_precision": ["tf32x3", "ieee"], "f16_scales": ["auto", "row", "chunk"]}
    """What the template reads from a variant's ctx.params. Only templates declaring a key read it:
    the precision knobs are gemm-tf32x3-strict-fp32's (and the structural rewrites'), the other
    GEMM skills declare their own space (tile families, group size, K chunks)."""
    # A prepared GEMM costs five host launches (two bounds, two preparations, the autotuned kernel of
    # ~25 arguments), all issued before the kernel that does the work can start. Measured on an H200
    # under the timing protocol (2026-11-30, tests/gpu/candidates_vs_eager.py, default candidates,
    # problems/measurements/h200-2026-11-30-rowscale/call5_gemm_graph_replay.txt, plain -> replayed):
    # level1/01 1.02 -> 0.81 ms, level1/03 0.65 -> 0.54, level2/04 0.83 -> 0.60, level2/13 0.95 -> 0.75,
    # level2/16 0.77 -> 0.57, level3/01 1.16 -> 1.02, level3/06 3.69 -> 2.02, level3/13 2.64 -> 2.18.
    graph_replay = "cuda-graph-replay"

    def match(self, region: Region) -> bool:
        op = region.anchor
        return (op is not None and op.kind in self.kinds and not region.prologue and gemm_ok(op, self.rank1)
                and chain_ok(region.epilogue))

    # ---- variant hooks ----------------------------------------------------------------------
    def own(self, ctx: EmitContext) -> dict:
        """The variant's parameters this template declares (`params`); others are ignored."""
        return {k: v for k, v in ctx.params.items() if k in self.params}

    def kernel_opts(self, region: Region, ctx: EmitContext) -> KernelOpts:
        op = region.anchor
        return KernelOpts(precision=precision(ctx, self.tf32, self.own(ctx)),
                          has_bias=op.kind == "linear" and op.attrs.get("bias") is not None)

    def tile_lists(self, ctx: EmitContext) -> TileLists:
        """(configs, prep_configs, prep16_configs) of this variant: the class's lists; skills whose
        variants pin a tile family or a group size override it."""
        return self.configs, self.prep_configs, self.prep16_configs

    def config_list(self, ctx: EmitContext) -> list[tuple[dict, int, int]]:
        return ctx.params.get("configs") or self.tile_lists(ctx)[0]

    def prep_config_list(self, ctx: EmitContext, f16: bool = False) -> list[tuple[dict, int, int]]:
        if f16:
            return ctx.params.get("prep16_configs") or self.tile_lists(ctx)[2]
        return ctx.params.get("prep_configs") or self.tile_lists(ctx)[1]

    def f16_scales(self, ctx: EmitContext) -> str:
        """Scales of fp16 operand parts: "auto" (by output size, runtime _GEMM_ROW_MIN), "row" or
        "chunk"."""
        p = self.own(ctx).get("f16_scales", "auto")
        return p if p in F16_SCALES else "auto"

    def splits(self, ctx: EmitContext) -> bool | int:
        """K chunks: True for the run-time rule (`split_k`), False for none; gemm-split-k's
        variants pin a count (the runtime then splits K into that many chunks whatever the shape)."""
        return self.split_k

    # ---- emission ---------------------------------------------------------------------------
    def emit(self, region: Region, ctx: EmitContext) -> Emitted:
        ctx.share("collapse", COLLAPSE)
        ctx.share("gemm_prep", GEMM_PREP)  # the runtime's preparation paths call it
        ctx.share("gemm_runtime", GEMM_RUNTIME)
        op = region.anchor
        out = region.output()
        if [v.name for v in region.outputs] not in ([], [out.name]):
            raise ValueError(f"GEMM region at {op.out.name}: intermediates escape the fused epilogue")
        chain = GemmChain(region.epilogue, op.out) if region.epilogue else None
        opts = self.kernel_opts(region, ctx)
        kname, lname = ctx.name("gemm_kernel"), ctx.name("gemm")
        kernels = [kernel_source(kname, opts, chain, self.config_list(ctx))]
        names = {"main": kname}
        if opts.precision == "tf32x3":
            kernels += self._three_dot_twins("main", "gemm", opts, chain, ctx, names)
        split = self.splits(ctx)
        if split:
            names["part"], names["reduce"] = ctx.name("gemm_splitk_kernel"), ctx.name("gemm_splitk_reduce")
            part = replace(opts, split=True)
            kernels += [kernel_source(names["part"], part, None, self.config_list(ctx)),
                        reduce_source(names["reduce"], opts.has_bias, chain)]
            if "main_prep" in names:
                kernels += self._three_dot_twins("part", "gemm_splitk", part, None, ctx, names)
        if self.small_dim:
            names["rows"], names["cols"] = ctx.name("gemv_kernel"), ctx.name("gemv_t_kernel")
            fma = replace(opts, inner="fma")
            kernels += [kernel_source(names["rows"], fma, chain, GEMV_CONFIGS),
                        kernel_source(names["cols"], replace(fma, swap=True), chain,
                                      GEMV_CONFIGS)]
        ext = chain.ext if chain is not None else []
        scalars = chain.scalars if chain is not None else []
        helpers = self.launcher(lname, op, opts, chain, names, len(ext), self.f16_scales(ctx), split)
        args = [v.name for v in op.tensor_inputs()] + [v.name for v in ext] + [v.name for v in scalars]
        line = f"{out.name} = {lname}({', '.join(args)})"
        return Emitted(kernels=kernels, helpers=helpers, lines=[line])

    def launcher(self, lname: str, op: Op, opts: KernelOpts, chain: GemmChain | None, names: dict[str, str],
                 n_ext: int, scales: str = "auto", split: bool | int | None = None) -> list[str]:
        """The launcher `lname`: one call of runtime _gemm_run with its kernels and a constant
        configuration; the runtime plans each operand signature once on meta tensors
        (_gemm_planner), so that a call costs a dict lookup, the operands' views, the allocations,
        the preparation passes (they read the data) and launches with the autotuner's kept pick."""
        ext = tuple(f"e{i}" for i in range(n_ext))
        scalars = tuple(f"k{j}" for j in range(len(chain.scalars))) if chain is not None else ()
        dtype = (chain.ops[-1].out if chain is not None else op.out).meta.dtype
        launch = GemmLaunch(
            name=lname, kernels=tuple(names[k] for k in SLOTS if k in names),
            operands=("a", "b", *(["bias"] if opts.has_bias else []), *ext), scalars=scalars,
            dtype=str(dtype), linear=op.kind == "linear", fold=self.fold, has_bias=opts.has_bias,
            # The epilogue operands' row-dim counts are constexprs of the kernels (GemmChain.kernel_params).
            rr=tuple(f"{chain.p}_RR{i}" for i in range(n_ext)) if chain is not None else (),
            precision=opts.precision, scales=scales, gemv=self.small_dim,
            split_k=self.split_k if split is None else split)
        return [launch.render()]

    def _three_dot_twins(self, kind: str, stem: str, opts: KernelOpts, chain: GemmChain | None,
                         ctx: EmitContext, names: dict[str, str]) -> list[str]:
        """The three-dot twins of kernel `kind` (runtime/gemm_prep.py), named into `names` as kind_prep,
        kind_prepb and kind_prept: both operands prepared, only B (A split in registers), only A
        (C^T = B^T A^T with B^T split in registers)."""
        sources = []
        if any(cfg["BLOCK_K"] != SCALE_K for cfg, _, _ in self.prep_config_list(ctx, True)):
            raise ValueError(f"fp16-part GEMM configurations need BLOCK_K = {SCALE_K} (the scale chunk)")
        for suffix, tag, changes in _TWINS:
            names[f"{kind}_{suffix}"] = ctx.name(f"{stem}_{tag}_kernel")
            sources.append(kernel_source(names[f"{kind}_{suffix}"], replace(opts, **changes), chain,
                                         self.prep_config_list(ctx, changes.get("f16", False))))
        return sources

"""The fused elementwise-chain template: one kernel for a whole chain of pointwise ops.

Memory-bound chains pay for every intermediate tensor written and read back; fused, each
external operand is read once and each needed output written once. Operands may broadcast
or be strided views: the launcher collapses dimensions at run time and passes strides, and
operands that are plain contiguous tensors of the output's shape skip index arithmetic.
"""

from __future__ import annotations

from ...frontend.ir import Region
from ...runtime import COLLAPSE
from ...templates.base import EmitContext, Emitted, Template
from ...templates.launch import autotune
from .codegen import chain_statements, external_inputs, runtime_scalars, tuple_literal

_LOW = {"torch.float16", "torch.bfloat16"}


class FusedElementwise(Template):
    kinds = ("pointwise",)
    runtime_scalars = True
    # Rationale: memory-bound streams want 16-byte accesses and several in flight per thread;
    # 1024-4096 elements per program with 4-8 warps covers both small and huge tensors.
    params = {"configs": [[(1024, 4, 2), (2048, 8, 2), (4096, 8, 2)]]}

    def match(self, region: Region) -> bool:
        return region.kind == "pointwise" and bool(region.ops) and len(external_inputs(region.ops)) > 0

    def emit(self, region: Region, ctx: EmitContext) -> Emitted:
        ctx.share("collapse", COLLAPSE)
        ext = external_inputs(region.ops)
        scalars = runtime_scalars(region.ops)
        outs = region.outputs
        kname, lname = ctx.name("pointwise_kernel"), ctx.name("pointwise")
        n_in = len(ext)
        in_args = [f"in{i}" for i in range(n_in)]
        stride_args = [f"s{i}_{d}" for i in range(n_in) for d in range(4)]
        full_args = [f"FULL{i}: tl.constexpr" for i in range(n_in)]
        out_args = [f"out{j}" for j in range(len(outs))]
        k_args = [f"k{j}" for j in range(len(scalars))]  # run-time Python numbers
        sig = ", ".join(out_args + in_args + ["n", "S1", "S2", "S3"] + stride_args + k_args
                        + ["RANK: tl.constexpr", *full_args, "I64: tl.constexpr", "BLOCK: tl.constexpr"])
        body = ["pid = tl.program_id(0)",
                "if I64:",
                "    pid = pid.to(tl.int64)",
                "offs = pid * BLOCK + tl.arange(0, BLOCK)",
                "mask = offs < n"]
        env: dict[str, str] = {v.name: f"k{j}" for j, v in enumerate(scalars)}
        for i, v in enumerate(ext):
            cast = ".to(tl.float32)" if str(v.meta.dtype) in _LOW else ""
            body += [f"if FULL{i}:",
                     f"    o{i} = offs",
                     "else:",
                     f"    o{i} = _bcast_off(offs, S1, S2, S3, s{i}_0, s{i}_1, s{i}_2, s{i}_3, RANK)",
                     f"x{i} = tl.load(in{i} + o{i}, mask=mask, other=0){cast}"]
            env[v.name] = f"x{i}"
        body += chain_statements(region.ops, env)
        for j, v in enumerate(outs):
            body.append(f"tl.store(out{j} + offs, {env[v.name]}, mask=mask)")
        configs = ctx.params.get("configs", self.params["configs"][0])
        kernel = (autotune([(dict(BLOCK=b), w, s) for b, w, s in configs], ["n"]) + f"def {kname}({sig}):\n"
                  + "\n".join("    " + ln for ln in body))
        ins, ks = [f"a{i}" for i in range(n_in)], [f"k{j}" for j in range(len(scalars))]
        plans = ctx.name("plans")
        # The launch plan (broadcast shape, collapsed sizes and strides, constexprs) depends on the
        # operands' shapes and strides only: runtime _pw_run computes it once per signature, so a
        # call costs a dict lookup, the output allocation and the launch.
        launcher = [f"{plans} = {{}}", "", "",
                    f"def {lname}({', '.join(ins + ks)}):",
                    f"    return _pw_run({plans}, {kname}, [{', '.join(ins)}], "
                    f"{tuple_literal([str(v.meta.dtype) for v in outs])}, {tuple_literal(ks)})"]
        names = ", ".join(v.name for v in outs)
        args = ", ".join(v.name for v in [*ext, *scalars])
        return Emitted(kernels=[kernel], helpers=["\n".join(launcher)],
                       lines=[f"{names} = {lname}({args})"])

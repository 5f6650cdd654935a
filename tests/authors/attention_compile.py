"""Compile the attention family's kernels (families/attention/kernel.py's tf32x3 kernel and
kernel_parts.py's fp16-parts kernel) for sm_90a without a GPU and print, per configuration,
ptxas's registers and spill bytes and the number of wgmma instructions, as JSON lines.
Run in a fresh process without TRITON_INTERPRET:

    python tests/authors/attention_compile.py [HEAD_DIM [MASK [split]]]    # default 80, 1 (additive)

`split` compiles both kernels with the head dims in two power-of-two chunks (the split_d variant).

The signature mimics a launch on contiguous (B, H, S, d) tensors: unit strides become constants
and pointers and the padded sizes carry 16-divisibility, as Triton specializes them at a launch.
"""

from __future__ import annotations

import json
import sys

import triton
from gemm_compile import sm90_report
from kernelskill.authors.builtin.families.attention.kernel import CONFIGS, _attn_fwd_kernel
from kernelskill.authors.builtin.families.attention.kernel_parts import PARTS_CONFIGS, _attn_parts_kernel
from kernelskill.authors.builtin.runtime.attention import _attn_split
from kernelskill.authors.builtin.runtime.common import _npow2

ONE = {"sqd", "skd", "svd", "smn", "sod"}
DIV16 = {"KP", "TKP", "sqm", "skn", "svn", "som", "smm", "sqh", "skh", "svh", "soh", "smh"}
F16 = {"kh", "kl", "vh", "vl"}
TENSORS = {"q", "k", "v", "m", "o", "ks", "vs"} | F16
FLOATS = {"scale", "fill"}


def compile_one(fn, kwargs: dict, warps: int, stages: int, consts: dict) -> dict:  # noqa: ANN001
    sig, attrs = {}, {}
    consts = {**consts, **kwargs}
    for i, name in enumerate(fn.arg_names):
        if fn.params[i].is_constexpr or name in ONE:
            sig[name] = "constexpr"
            consts.setdefault(name, 1)
        elif name in TENSORS:
            sig[name], attrs[(i,)] = "*fp16" if name in F16 else "*fp32", [["tt.divisibility", 16]]
        elif name in FLOATS:
            sig[name] = "fp32"
        else:
            sig[name] = "i32"
            if name in DIV16:
                attrs[(i,)] = [["tt.divisibility", 16]]
    src = triton.compiler.ASTSource(fn, sig, {k: v for k, v in consts.items() if k in sig}, attrs)
    return {"kernel": fn.__name__, **kwargs, "warps": warps, "stages": stages,
            **sm90_report(src, warps, stages)}


def main() -> None:
    d = int(sys.argv[1]) if len(sys.argv) > 1 else 80
    mask = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    (bd, bd1) = _attn_split(d) if sys.argv[3:4] == ["split"] else (max(16, _npow2(d)), 0)
    common = {"MASK": mask, "MASK_FIRST": False, "CAUSAL": False, "WEIGHTS": 0, "HEAD_MAJOR": False,
              "I64": False, "BLOCK_D": bd, "BLOCK_DV": bd, "BLOCK_D1": bd1, "BLOCK_DV1": bd1}
    runs = [(_attn_fwd_kernel, CONFIGS, common), (_attn_parts_kernel, PARTS_CONFIGS, common)]
    for fn, configs, consts in runs:
        for kwargs, warps, stages in configs:
            try:
                print(json.dumps(compile_one(fn, kwargs, warps, stages, consts)), flush=True)
            except Exception as e:  # noqa: BLE001 - one configuration's failure must not hide the rest
                print(json.dumps({"kernel": fn.__name__, **kwargs, "warps": warps, "stages": stages,
                                  "error": f"{type(e).__name__}: {str(e)[:300]}"}), flush=True)


if __name__ == "__main__":
    main()

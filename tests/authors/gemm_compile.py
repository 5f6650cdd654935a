"""Compile a candidate's three-dot GEMM kernels (runtime/gemm_prep.py) for sm_90a without a GPU and print,
per configuration, ptxas's registers and spill bytes and the number of wgmma instructions, as JSON.
Run in a fresh process without TRITON_INTERPRET: `python gemm_compile.py CANDIDATE.py`.

The signature mimics a launch on K-contiguous operands: Triton specializes an integer argument of 1
into a constant and marks pointers and 16-divisible sizes, and without that the kernel it builds
(scalar loads, extra registers) is not the one the GPU runs."""

import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile

import torch
import triton
from triton.backends.compiler import GPUTarget

torch.cuda.is_available = lambda: True  # the candidate's _configs() then keeps every configuration
ONE = {"s_ak", "s_bk", "s_bias"}
DIV16 = {"K", "K_CHUNK", "N", "s_am", "s_bn", "s_a0", "s_a1", "s_b0", "s_b1"}
PTXAS = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "ptxas")


def compile_one(fn, cfg) -> dict:
    sig, consts, attrs = {}, {"I64": False, **cfg.kwargs}, {}
    for i, name in enumerate(fn.arg_names):
        if fn.params[i].is_constexpr or name in ONE:
            sig[name] = "constexpr"
            consts.setdefault(name, 1)
        elif name.endswith("_ptr"):
            # fp16 parts (runtime/gemm_prep.py) feed the 3xf16 kernel's operands
            f16 = "3xf16" in fn.__name__ and name in ("a_ptr", "b_ptr", "al_ptr", "bl_ptr")
            sig[name], attrs[(i,)] = "*fp16" if f16 else "*fp32", [["tt.divisibility", 16]]
        else:
            sig[name] = "i32"
            if name in DIV16:
                attrs[(i,)] = [["tt.divisibility", 16]]
    src = triton.compiler.ASTSource(fn, sig, {k: v for k, v in consts.items() if k in sig}, attrs)
    return {"kernel": fn.__name__, "tile": [cfg.kwargs[b] for b in ("BLOCK_M", "BLOCK_N", "BLOCK_K")],
            "warps": cfg.num_warps, "stages": cfg.num_stages,
            **sm90_report(src, cfg.num_warps, cfg.num_stages)}


def sm90_report(src, warps: int, stages: int) -> dict:  # noqa: ANN001
    """Compile `src` (a triton.compiler.ASTSource) for sm_90a; ptxas's registers and spill bytes
    and the PTX's wgmma count."""
    k = triton.compile(src, target=GPUTarget("cuda", 90, 128),
                       options={"num_warps": warps, "num_stages": stages})
    with tempfile.TemporaryDirectory() as d:
        ptx = os.path.join(d, "k.ptx")
        with open(ptx, "w") as f:
            f.write(k.asm["ptx"])
        log = subprocess.run([PTXAS, "-v", "--gpu-name", "sm_90a", ptx, "-o", os.path.join(d, "k.cubin")],
                             capture_output=True, text=True, check=True).stderr
    return {"registers": int(re.search(r"Used (\d+) registers", log).group(1)),
            "spill_bytes": int(re.search(r"(\d+) bytes spill stores", log).group(1)),
            "wgmma": k.asm["ptx"].count("wgmma.mma_async")}


if __name__ == "__main__":
    spec = importlib.util.spec_from_file_location("candidate", sys.argv[1])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows = [compile_one(obj.fn, cfg) for name, obj in vars(module).items()
            if isinstance(obj, triton.runtime.autotuner.Autotuner) and "_3x" in name
            for cfg in obj.configs]
    print(json.dumps(rows))

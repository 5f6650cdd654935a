"""The normalization kernels are real Triton functions (families/norms/kernels.py) and `render`
derives every generated variant from them: the chain-free kernel a solution ships is the linted
function itself, and fused chains replace the load and the epilogue, nothing else."""

from __future__ import annotations

import ast
import inspect

import torch
import torch.nn.functional as F
from kernelskill.authors.builtin.families.norms import kernels as S

PRO = ["p0 = tl.load(pa0 + lin, mask=mask, other=0.0)", "v = tl.maximum(p0, 0.0)"]
EPI = ["res = out * 2.0"]


def _assigned(src: str) -> set[str]:
    return {t.id for n in ast.walk(ast.parse(src)) if isinstance(n, ast.Assign)
            for t in n.targets if isinstance(t, ast.Name)}


def test_chain_free_render_is_the_real_function() -> None:
    for kernel in S.KERNELS.values():
        src = S.render(kernel, kernel.fn.fn.__name__)
        assert src.startswith("@triton.autotune(") and S.DIRECT_LOAD in src
        # Past the decorators, every rendered line is the real function's, in order (the noqa
        # comments aside).
        real = [ln.split("  # noqa")[0] for ln in inspect.getsource(kernel.fn.fn).split("\n")]
        rendered = src.split("@triton.jit\n", 1)[1].split("\n")
        it = iter(real)
        assert all(ln in it for ln in rendered), kernel.fn.fn.__name__
        # An assignment the chain-free kernel never reads is dropped (the statistics kernel's `lin`).
        assert ("lin" in _assigned(src)) == (kernel is not S.KERNELS["stats"])


def test_a_prologue_replaces_the_load_and_drops_x_offsets() -> None:
    for name, kernel in S.KERNELS.items():
        src = S.render(kernel, "_k_7", load=PRO, epilogue=EPI if kernel.epilogue else None,
                       plain=("pa0",), const=("PC: tl.constexpr",))
        fn = ast.parse(src).body[0]
        assert isinstance(fn, ast.FunctionDef) and fn.name == "_k_7"
        args = [a.arg for a in fn.args.args]
        first_const = next(i for i, a in enumerate(fn.args.args) if a.annotation is not None)
        assert args[first_const - 1] == "pa0" and args[-1] == "PC", name
        assert S.DIRECT_LOAD not in src and "v = tl.maximum(p0, 0.0)" in src
        assert not {"xoff", "xb", "c_x", "ac_x"} & _assigned(src), name
        assert "lin" in _assigned(src)
        lines = {ln.strip() for ln in src.split("\n")}
        assert S.NO_EPILOGUE not in lines and ("res = out * 2.0" in lines) == kernel.epilogue


def test_real_row_kernel_is_a_layer_norm() -> None:
    """The real function runs as is (CPU interpreter in tests): one program per row."""
    x = torch.randn(5, 37)
    w, b = torch.randn(37), torch.randn(37)
    y = torch.empty_like(x)
    S._nrm_row_kernel[(5,)](x, y, w, b, 5, 37, x.stride(0), 1e-5, 1, 1, 1, MODE=S.LAYER, AFF=2,
                            HAS_W=True, HAS_B=True, I64=False, BLOCK=64, ROWS=1)
    torch.testing.assert_close(y, F.layer_norm(x, (37,), w, b, 1e-5), rtol=1e-5, atol=1e-5)


def test_real_col_kernel_normalizes_a_strided_dim() -> None:
    """F.normalize over dim 1 of (O, R, I) in one pass and in the two-loop form."""
    x = torch.randn(3, 50, 6)
    for one_pass, block_r in ((True, 64), (False, 16)):
        y = torch.empty_like(x)
        S._nrm_col_kernel[(3 * 1,)](x, y, x, x, 3, 50, 6, *x.stride(), *y.stride(), 1e-12, MODE=S.L2,
                                    HAS_W=False, HAS_B=False, I64=False, ONE_PASS=one_pass,
                                    BLOCK_R=block_r, BLOCK_I=8)
        torch.testing.assert_close(y, F.normalize(x, dim=1), rtol=1e-5, atol=1e-6)


# Compiled for sm90 in a fresh process: under TRITON_INTERPRET=1 tl's functions cannot compile.
_LAYOUT_SCRIPT = """
import re, sys
import triton
from triton.backends.compiler import GPUTarget
from kernelskill.authors.builtin.families.norms.kernels import _nrm_stats_kernel as fn
for case in sys.argv[1:]:
    sig = {n: "constexpr" if p.is_constexpr else ("*fp32" if n in ("x", "part", "xb") else "i32")
           for n, p in zip(fn.arg_names, fn.params)}
    sig["sc"] = "constexpr"  # a stride of 1 is specialised at launch
    consts = dict(sc=1, ABS=False, HAS_XB=False, I64=False, BLOCK_A=1, BLOCK_C=64, BLOCK_B=64)
    src = triton.compiler.ASTSource(fn, sig, consts, {(0,): [["tt.divisibility", 16]]})
    k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 8, "num_stages": 1})
    load = next(ln for ln in k.asm["ttgir"].splitlines() if "tt.load" in ln and "1x64x64" in ln)
    name = re.search(r"#(blocked\\d*)>", load).group(1)
    print(case, re.search("#" + name + r" = .*order = \\[(\\d)", k.asm["ttgir"]).group(1))
"""


def test_channels_last_statistics_load_along_the_channels() -> None:
    """With the channels as x's contiguous run (a batch, instance or group norm reading a
    channels-last input), the statistics' loads are laid out along them (warps read 128-byte
    runs): a group offset Triton cannot prove contiguous (a vector modulo) would stride them."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", _LAYOUT_SCRIPT, "channels-last"], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["channels-last", "1"], done.stdout  # axis 1: the channels

"""Files and code the checks never saw (threat class 2), run time: Triton compiles only the kernels the
static checks read (eval/candidate/kernel_pin.py), and every touch of an object the candidate made happens
under
the audit guard (eval/candidate/main.py init and forward). Each attack computes the right answer or
leaves a marker where the test sees it; before, the swapped kernels passed and the markers appeared.
The static layer is bypassed here (`_run_worker`), as an attacker past it would be; honest kernels
(autotuned, heuristics, a jit helper, Triton's own tl.sum) still pass through the real evaluator,
on the CPU (Triton's interpreter) or, under KS_ATTACK_DEVICE=cuda, the GPU (attack_device.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from attack_device import DEVICE, cpu_only, needs_device
from kernelskill.eval.api import _run_worker, evaluate
from kernelskill.eval.types import EvalOptions, EvalResult

HEAD = "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n"

# ---- the compiled front end ----------------------------------------------------
COMPILED = textwrap.dedent("""
    import json, linecache, sys, types
    from pathlib import Path
    import triton, triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.runtime import jit
    from kernelskill.eval.candidate import audit, kernel_pin
    src = '''
    import triton
    import triton.language as tl


    @triton.jit
    def k(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        m = offs < n
        tl.store(x_ptr + offs, tl.sum(tl.load(x_ptr + offs, mask=m), 0) * 2.0, mask=m)
    '''
    linecache.cache["cand.py"] = (len(src), None, src.splitlines(True), "cand.py")
    mod = types.ModuleType("cand")
    exec(compile(src, "cand.py", "exec"), mod.__dict__)
    kernel_pin.install(kernel_pin.pins(src))
    guard = audit.Guard(Path(sys.argv[1]), "cand.py")

    def build():
        sig = {"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
        triton.compile(ASTSource(fn=mod.k, signature=sig, constexprs={"BLOCK": 16}),
                       target=GPUTarget("cuda", 80, 32))

    def swap_text():
        mod.k._unsafe_update_src(mod.k.src.replace("* 2.0", "* 3.0"))
        build()

    def swap_tree():
        tree = mod.k.parse()
        tree.body[0].body[-1].value.args[1].right.value = 3.0
        mod.k.parse = lambda: tree
        mod.k.hash = None
        build()

    def inject_binder():
        kp = mod.k.params[1]
        kp.__dict__["annotation_type"] = 'i32", None) if __import__("os").mkdir("@D@/marker") else ("'
        jit.create_function_from_signature(mod.k.signature, mod.k.params, None)(0, 1, 16)

    out = {}
    for name, f in [("honest", build), ("swap_text", swap_text), ("swap_tree", swap_tree),
                    ("inject_binder", inject_binder)]:
        try:
            with guard:
                f()
            out[name] = None
        except audit.Violation as v:
            out[name] = v.check
    print(json.dumps(out))
""")


def test_compiled_triton_compiles_only_pinned_kernels(tmp_path: Path) -> None:
    # Triton's compiled front end runs on the CPU as far as PTX: the IR is generated from the tree
    # kernel_pin verifies, whatever replaced the text (`_unsafe_update_src`) or the tree (`parse`).
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = str(tmp_path / "cache")
    p = subprocess.run([sys.executable, "-c", COMPILED.replace("@D@", str(tmp_path)), str(tmp_path)],
                       capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-3000:]
    assert json.loads(p.stdout.strip().splitlines()[-1]) == {
        "honest": None, "swap_text": "kernel_changed", "swap_tree": "kernel_changed",
        "inject_binder": "kernel_changed"}
    assert not (tmp_path / "marker").exists()


# ---- through the real evaluator (CPU and interpreter, or the GPU) -------------
PROBLEM = (Path(__file__).resolve().parents[1] / "fixtures" / "relu_scale.py").read_text()
OPTS = EvalOptions(device=DEVICE, size="small", trials=1, timeout_s=120, baselines=False, timing=False)
pytestmark = needs_device
KERNEL = '''
@triton.jit
def relu_scale(x_ptr, b_ptr, y_ptr, n, cols, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x_ptr + offs, mask=m) + tl.load(b_ptr + offs % cols, mask=m)
    tl.store(y_ptr + offs, tl.maximum(v, 0.0) * 2.0, mask=m)


def other(x_ptr, b_ptr, y_ptr, n, cols, BLOCK: tl.constexpr):  # as right, but never checked as a kernel
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x_ptr + offs, mask=m) + tl.load(b_ptr + offs % cols, mask=m)
    tl.store(y_ptr + offs, tl.where(v > 0, v, 0.0) * 2.0, mask=m)
'''


def cand(init: str = "", forward: str = "", extra: str = "", base: str = "nn.Module",
         returns: str = "y") -> str:
    pad = " " * 8
    return (f"{HEAD}import subprocess\n{KERNEL}{textwrap.dedent(extra)}\n\nclass ModelNew({base}):\n"
            "    def __init__(self, cols):\n        super().__init__()\n"
            "        self.bias = nn.Parameter(torch.randn(cols))\n"
            f"{textwrap.indent(textwrap.dedent(init), pad)}\n"
            f"    def forward(self, x):\n{textwrap.indent(textwrap.dedent(forward), pad)}\n"
            "        y = torch.empty_like(x)\n        n = x.numel()\n"
            "        relu_scale[(triton.cdiv(n, 256),)](x, self.bias, y, n, x.shape[-1], BLOCK=256)\n"
            f"        return {returns}\n")


def worker(source: str) -> EvalResult:
    return _run_worker(PROBLEM, source, OPTS, "relu_scale.py", "cand.py", EvalResult(device=DEVICE))


SWAPS = {  # each computes the right answer, with code that is not the checked kernel's
    "the kernel's function replaced": "relu_scale.rewriter.fn = other\nrelu_scale.fn = other\n",
    "triton.jit applied at run time": "global relu_scale\nrelu_scale = triton.jit(other)\n",
    "the interpreter's cache filled from text": """
        src = "def relu_scale(x_ptr, b_ptr, y_ptr, n, cols, BLOCK):\\n    pass\\n"
        made = relu_scale.rewriter._compile_and_exec(relu_scale.rewriter._transform_ast(src))
        relu_scale.rewritten_fn[relu_scale.fn] = made
        """,
}


# `rewriter` and `rewritten_fn` are the interpreter's; the compiled front end's own swaps (its text,
# its tree) are test_compiled_triton_compiles_only_pinned_kernels'.
INTERPRETED = cpu_only("Triton's interpreter only (TRITON_INTERPRET=1): a compiled kernel has no rewriter")


@pytest.mark.parametrize("init", [pytest.param(v, marks=INTERPRETED if "rewriter" in v else ())
                                  for v in SWAPS.values()], ids=list(SWAPS))
def test_swapped_kernel_is_refused(init: str) -> None:
    r = worker(cand(init=init))
    assert not r.correct and "kernel_changed" in (r.reason or ""), (r.stage, r.reason)


@INTERPRETED
def test_swapped_kernel_is_its_own_check() -> None:
    r = worker(cand(init=SWAPS["the kernel's function replaced"]))
    assert r.failed_checks == ["kernel_changed"], (r.failed_checks, r.reason)


def test_honest_kernels_compile_pinned() -> None:
    # Autotuned and heuristics-wrapped kernels, a jit helper they call and Triton's own tl.sum.
    extra = '''
    @triton.jit
    def _scale(v):
        return v * 2.0


    @triton.autotune(configs=[triton.Config({"BLOCK": 128})], key=["n"])  # one config: no benchmark on a CPU
    @triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
    @triton.jit
    def tuned(x_ptr, b_ptr, y_ptr, n, cols, BLOCK: tl.constexpr, EVEN: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        v = tl.load(x_ptr + offs, mask=m) + tl.load(b_ptr + offs % cols, mask=m)
        zero = tl.sum(tl.zeros((BLOCK,), dtype=tl.float32), 0)
        tl.store(y_ptr + offs, _scale(tl.maximum(v, zero)), mask=m)
    '''
    forward = ("z = torch.empty_like(x)\n"
               "tuned[lambda meta: (triton.cdiv(x.numel(), meta['BLOCK']),)](x, self.bias, z, x.numel(), "
               "x.shape[-1])\n")
    r = evaluate(PROBLEM, cand(extra=extra, forward=forward, returns="(y + z) * 0.5").replace(
        "import subprocess\n", ""), OPTS, problem_name="relu_scale.py", candidate_name="cand.py")
    assert r.correct, r.reason


RUN = "subprocess.run(['touch', '{marker}'])"
OUTSIDE: dict[str, Callable[[str], str]] = {  # candidate code the candidate process used to run unguarded
    "parameters() overridden": lambda m: cand(extra=f'''
        class Base(nn.Module):
            def parameters(self, recurse=True):
                {RUN.format(marker=m)}
                return super().parameters(recurse)
        ''', base="Base"),
    "an exception's __str__, raised in __init__": lambda m: cand(init=f'''
        class E(Exception):
            def __str__(self):
                {RUN.format(marker=m)}
                return "boom"
        raise E()
        '''),
    "a BaseException's __str__, raised in __init__": lambda m: cand(init=f'''
        class E(BaseException):
            def __str__(self):
                {RUN.format(marker=m)}
                return "boom"
        raise E()
        '''),
    "an exception's __str__, raised in forward": lambda m: cand(forward=f'''
        class E(Exception):
            def __str__(self):
                {RUN.format(marker=m)}
                return "boom"
        raise E()
        '''),
    "a tensor subclass's property read while the output is described": lambda m: cand(extra=f'''
        class Sub(torch.Tensor):
            @property
            def dtype(self):
                {RUN.format(marker=m)}
                return torch.float32
        ''', returns="y.as_subclass(Sub)"),
}


@pytest.mark.parametrize("make", OUTSIDE.values(), ids=list(OUTSIDE))
def test_candidate_code_runs_only_under_the_guard(make: Callable[[str], str],
                                                    shared_dir: Callable[[], Path]) -> None:
    marker = shared_dir() / "marker"  # a folder the candidate process sees as the test does
    r = worker(make(str(marker)))
    assert not r.correct and r.failed_checks == ["audit"], (r.stage, r.failed_checks, r.reason)
    assert not marker.exists()

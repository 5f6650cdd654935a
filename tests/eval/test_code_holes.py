"""Files and code the checks never saw (threat class 2): each attack as an attacker writes it, refused
by the layer named, and checked by its side effect (the marker file absent, the secret not leaked)
where it has one. Every attack here got through before: the static allowlist bypassed through objects
it allows, `exec` run by a library callback, the problem file read relative to a directory
descriptor, a Triton kernel swapped after the checks, candidate code run outside the guard.
Honest code beside each attack still passes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from kernelskill.eval.static.allow import GATEWAYS
from kernelskill.eval.static.checks import run_static_checks

HEAD = "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n"
TAIL = "\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return x * 2.0\n"

# ---- 1. the static layer: modules reached through objects it allows --------------------------------
STATIC = {  # id -> (check, body): every `# BAD` line must fail the check
    "module in a container": ("attribute_allowlist", """
        m = [torch.cuda][0]  # BAD
        m.os.system("true")  # BAD
        """),
    "module from a call": ("attribute_allowlist", """
        (lambda: torch.cuda)().os.getcwd()  # BAD
        """),
    "module as a default": ("attribute_allowlist", """
        def f(m=torch.cuda):  # BAD
            return m.os  # BAD
        """),
    "module as a loop target, a walrus, a starred, a dict value, a keyword": ("attribute_allowlist", """
        for m in (torch.cuda,):  # BAD
            pass
        if (w := torch.cuda):  # BAD
            pass
        a, *b = 1, torch.cuda  # BAD
        d = {"m": torch.cuda}  # BAD
        print(torch.cuda)  # BAD
        """),
    "one name, two modules": ("attribute_allowlist", """
        def a():
            m = torch.cuda  # BAD
            return m.memory


        def b():
            m = torch.nn  # BAD
            return m.functional
        """),
    "module as a class attribute": ("attribute_allowlist", """
        class K:
            U = torch.cuda  # BAD
        """),
    "a call that returns a module": ("attribute_allowlist", """
        mod = torch.get_device_module("cpu")  # BAD
        """),
    "gateway names on any object": ("attribute_allowlist", """
        x = torch.zeros(1)
        y = x.new_zeros(1).os  # BAD
        z = getattr(x, "sys")  # BAD
        """),
    "computed name on an object that is not self": ("reflection", """
        def g(obj, s):
            return getattr(obj, f"o{s}")  # BAD
        """),
    "builtins module behind triton.language.core": ("attribute_allowlist", """
        bl = [tl.core][0].builtins  # BAD
        """),
    "dataclass fields from __annotations__ (its generated code)": ("reflection", """
        class P:
            __annotations__ = {"a,__import__('os').getcwd()": int}  # BAD
        """),
    "a __class__ that lies": ("reflection", """
        class T:
            @property
            def __class__(self):  # BAD
                return torch.Tensor
        """),
    "code builtins handed to a library as values": ("dynamic_code", """
        import functools
        ran = list(map(exec, ["x = 1"]))  # BAD
        load = functools.partial(__import__, "os")  # BAD
        texts = sorted(["a"], key=open)  # BAD
        """),
    "triton.compile and str_to_ty (which evals)": ("attribute_allowlist", """
        c = triton.compile  # BAD
        t = tl.str_to_ty  # BAD
        """),
    "kernel source swapped after the checks": ("reflection", """
        @triton.jit
        def k(x_ptr):
            pass


        k._unsafe_update_src("def k(x_ptr):\\n    pass\\n")  # BAD
        k.fn = print  # BAD
        f = k.rewriter._compile_and_exec  # BAD
        """),
}


@pytest.mark.parametrize("check,body", STATIC.values(), ids=list(STATIC))
def test_static_bypass_is_refused(check: str, body: str) -> None:
    source = HEAD + textwrap.dedent(body) + TAIL
    failures = run_static_checks(source)
    bad = [i for i, t in enumerate(source.splitlines(), 1) if "# BAD" in t]
    assert bad and set(bad) <= {f.line for f in failures if f.check == check}, failures


def test_honest_patterns_beside_them_pass() -> None:
    source = HEAD + textwrap.dedent("""
        import torch.nn.functional as F

        cuda = torch.cuda


        @triton.autotune(configs=[triton.Config({"BLOCK": 64})], key=["n"])
        @triton.jit
        def k(x_ptr, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv0, self.data_scale = nn.Conv2d(3, 3, 1), 2.0

            def forward(self, x):
                dt = getattr(tl, "float32")
                y = getattr(self, f"conv{0}")(x).data * self.data_scale
                cfg = getattr(k, "best_config", None)
                return F.relu(y) if cuda.is_available() or dt is not None or cfg is None else y
        """)
    assert run_static_checks(source) == []


def test_gateway_names_cover_what_the_libraries_hold() -> None:
    # Where torch, triton and numpy (and the allowed standard modules) keep an OS or interpreter
    # module, under which name: recomputed in a fresh interpreter, so a library upgrade that adds a
    # name fails here instead of opening a way around the static layer.
    script = textwrap.dedent("""
        import gc, json, sys, types
        import collections, dataclasses, enum, functools, itertools, math, operator, typing
        import numpy, torch, triton, triton.language, triton.compiler, triton.runtime.interpreter
        CORE = ("os posix sys builtins io _io subprocess importlib _frozen_importlib "
                "_frozen_importlib_external ctypes socket _socket gc inspect pickle marshal threading "
                "_thread multiprocessing signal "
                "shutil tempfile glob linecache atexit runpy zipimport pathlib asyncio concurrent urllib "
                "tarfile zipfile").split()
        core = lambda n: any(n == c or n.startswith(c + ".") for c in CORE)
        held = lambda d: {k for k, v in list(d.items())
                          if isinstance(v, types.ModuleType) and core(v.__name__)}
        names = set()
        for name, mod in list(sys.modules.items()):
            if isinstance(mod, types.ModuleType) and not core(name):
                names |= held(vars(mod))
        for cls in [o for o in gc.get_objects() if isinstance(o, type)]:
            for c in cls.__mro__:
                names |= held(getattr(c, "__dict__", {}))
        print(json.dumps(sorted(names)))
        """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    held = set(json.loads(out.stdout.strip().splitlines()[-1]))
    assert held <= GATEWAYS, sorted(held - GATEWAYS)


# ---- 2. the audit hook: code from text, libraries handed exec, files through descriptors ------------
RUNNER = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    import ctypes, gc, marshal, pathlib, shutil, socket, subprocess
    import torch, triton, triton.language, torch.utils._pytree
    from kernelskill.eval.candidate import audit, kernel_pin
    scratch, worker, problem, source = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.stdin.read()
    kernel_pin.install(kernel_pin.pins(source))
    guard = audit.Guard(scratch, "cand.py", worker_dir=worker, problem_file=problem)
    code = compile(source, "cand.py", "exec")
    out = {"check": None}
    try:
        with guard:
            exec(code, {"__name__": "_candidate_test"})
    except audit.Violation as v:
        out = {"check": v.check, "message": str(v)}
    print(json.dumps(out))
""")


def guarded_run(tmp_path: Path, source: str, env: dict[str, str] | None = None) -> dict:
    """`source` (`@D@`: tmp_path) as candidate code under the guard, in a fresh interpreter."""
    for d in ("scratch", "worker", "cache"):
        (tmp_path / d).mkdir(exist_ok=True)
    (tmp_path / "problem.py").write_text("SECRET = 'hunter2'\n")
    env = {**os.environ, "TRITON_INTERPRET": "1", "TRITON_CACHE_DIR": str(tmp_path / "cache"), **(env or {})}
    args = [str(tmp_path / d) for d in ("scratch", "worker", "problem.py")]
    p = subprocess.run([sys.executable, "-c", RUNNER, *args], input=textwrap.dedent(source).replace(
        "@D@", str(tmp_path)), capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path / "scratch")
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


TOUCH = "__import__('subprocess').run(['touch', '@D@/marker'])"
HOOK = {  # id -> source; each leaves @D@/marker or @D@/scratch/leak behind if it works
    "exec handed to a tree-map": f"""
        import torch.utils._pytree as pytree
        pytree.tree_map(exec, ["{TOUCH}"])
        """,
    "a library's eval of a string (tl.str_to_ty)": f"""
        import triton.language as tl
        try:
            tl.str_to_ty("tensordesc<fp32[16],{TOUCH}>", None)
        except Exception:
            pass
        """,
    "code a dataclass generated from a field name": f"""
        import dataclasses
        class P:
            __annotations__ = {{"__class__,{TOUCH}": int}}
        Q = dataclasses.dataclass(init=False, repr=False)(P)
        Q() == Q()
        """,
    "the problem file relative to a directory descriptor": """
        import os
        d = os.open("@D@", os.O_RDONLY)
        fd = os.open("problem.py", os.O_RDONLY, dir_fd=d)
        open("@D@/scratch/leak", "w").write(os.read(fd, 100).decode())
        """,
    "the problem file through os.fwalk": """
        import os
        for root, dirs, files, rootfd in os.fwalk("@D@"):
            if "problem.py" in files:
                fd = os.open("problem.py", os.O_RDONLY, dir_fd=rootfd)
                open("@D@/scratch/leak", "w").write(os.read(fd, 100).decode())
        """,
    "a path object whose __fspath__ the hook would run": f"""
        import os, shutil
        os.makedirs("@D@/scratch/x", exist_ok=True)
        class P:
            def __fspath__(self):
                {TOUCH}
                return "@D@/scratch/x"
        shutil.rmtree(P())
        """,
    "a kernel written into Triton's cache": """
        import os
        os.makedirs(os.environ["TRITON_CACHE_DIR"] + "/k", exist_ok=True)
        open(os.environ["TRITON_CACHE_DIR"] + "/k/marker", "wb").write(b"a cubin")
        """,
    "kernel text handed to the interpreter's rewriter": f"""
        import triton
        @triton.jit
        def k(x):
            pass
        f = k.rewriter._compile_and_exec(k.rewriter._transform_ast("def k(x):\\n    {TOUCH}\\n"))
        f(1)
        """,
}


@pytest.mark.parametrize("source", HOOK.values(), ids=list(HOOK))
def test_audit_hook_refuses(tmp_path: Path, source: str) -> None:
    verdict = guarded_run(tmp_path, source)
    assert verdict["check"] in ("audit", "kernel_changed"), verdict
    assert not (tmp_path / "marker").exists() and not (tmp_path / "scratch" / "leak").exists()
    assert not (tmp_path / "cache" / "k" / "marker").exists()

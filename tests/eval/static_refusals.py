"""Adversarial candidates, part two: code the checks refuse outright (precision downgrades,
introspection, dynamic code, global state, the import / attribute / decorator allowlists). Each
body's `# BAD` lines must fail the named check."""

REFUSALS = {
    "precision_downgrade": [
        """
        @triton.jit
        def _split(x):
            # Looks like the compensated fp16 split, but lo is not x's residual.
            hi = x.to(tl.float16)  # BAD
            lo = (x - x).to(tl.float16)  # BAD
            return hi, lo


        @triton.jit
        def _half(x):
            hi = x.to(tl.float16)  # BAD
            return hi, hi


        @triton.jit
        def cast_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(y_ptr + offs, tl.load(x_ptr + offs).to(tl.float16))  # BAD


        def alloc(x):
            return torch.empty(x.shape, dtype=torch.float16, device=x.device)  # BAD
        """,
        """
        @triton.jit
        def mm_kernel(a_ptr, b_ptr, c_ptr, K, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
            for k in range(0, K, BLOCK):
                a = tl.load(a_ptr + offs[:, None] * K + k + offs[None, :])
                b = tl.load(b_ptr + (k + offs[:, None]) * BLOCK + offs[None, :])
                acc += tl.dot(a, b)  # BAD
                acc += tl.dot(a, b, input_precision="tf32")  # BAD
                acc += tl.dot(a, b, allow_tf32=True)  # BAD
                acc += tl.dot(a.to(tl.bfloat16), b.to(tl.bfloat16), input_precision="ieee")  # BAD
                acc += a @ b  # BAD
            tl.store(c_ptr + offs[:, None] * BLOCK + offs[None, :], acc)
        """,
        """
        @triton.jit
        def mm3_kernel(a_ptr, al_ptr, b_ptr, bl_ptr, c_ptr, K, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
            for k in range(0, K, BLOCK):
                a = tl.load(a_ptr + offs[:, None] * K + k + offs[None, :])
                al = tl.load(al_ptr + offs[:, None] * K + k + offs[None, :])
                b = tl.load(b_ptr + (k + offs[:, None]) * BLOCK + offs[None, :])
                bl = tl.load(bl_ptr + (k + offs[:, None]) * BLOCK + offs[None, :])
                # Three one-pass dots that only look like the compensated triple.
                p = tl.dot(a, b, input_precision="tf32")  # BAD
                p = tl.dot(a, b, acc=p, input_precision="tf32")  # BAD
                p = tl.dot(a, b, acc=p, input_precision="tf32")  # BAD
                q = tl.dot(a, bl, input_precision="tf32")  # BAD
                q = tl.dot(al, b, input_precision="tf32")  # BAD
                q = tl.dot(a, b, acc=q, input_precision="tf32")  # BAD
                acc += p + q
            tl.store(c_ptr + offs[:, None] * BLOCK + offs[None, :], acc)
        """,
        """
        PRECISION = "ieee"


        @triton.jit
        def dot_kernel(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            a = tl.load(a_ptr + offs[:, None] * BLOCK + offs[None, :])
            b = tl.load(b_ptr + offs[:, None] * BLOCK + offs[None, :])
            c = tl.dot(a, b, input_precision=PRECISION)  # BAD
            tl.store(c_ptr + offs[:, None] * BLOCK + offs[None, :], c)
        """,
        """
        torch.backends.cuda.matmul.allow_tf32 = True  # BAD
        torch.set_float32_matmul_precision("high")  # BAD


        class ModelNew(nn.Module):
            def forward(self, a, b):
                with torch.autocast("cuda"):  # BAD
                    c = torch.matmul(a.half(), b.to(torch.float16))  # BAD
                return c.float()
        """,
    ],
    "introspection": [
        """
        import gc  # BAD
        import sys


        class ModelNew(nn.Module):
            def forward(self, x):
                for obj in gc.get_objects():  # BAD
                    if type(obj).__name__ == "Model" and hasattr(obj, "last_output"):
                        return obj.last_output
                caller = sys._getframe(1)  # BAD
                return caller.f_back.f_locals["expected"]  # BAD
        """,
        """
        import inspect  # BAD


        def spy(module, args, output):
            globals()["LAST"] = output  # BAD


        torch.nn.modules.module.register_module_forward_hook(spy)  # BAD


        class ModelNew(nn.Module):
            def forward(self, x):
                name = "get_" + "objects"
                return getattr(torch, name)  # BAD
        """,
    ],
    "dynamic_code": [
        """
        import pickle  # BAD

        KERNEL = "def fast(x):\\n    return x.clamp(min=0)\\n"
        exec(KERNEL)  # BAD


        class ModelNew(nn.Module):
            def forward(self, x):
                with open("/tmp/expected.pkl", "rb") as f:  # BAD
                    return pickle.load(f)  # BAD
        """,
        """
        from math import *  # BAD


        class ModelNew(nn.Module):
            def forward(self, x):
                fn = eval("torch.relu")  # BAD
                os = __import__("os")  # BAD
                code = compile("x", "<k>", "eval")  # BAD
                return fn(x)
        """,
    ],
    "global_state": [
        """
        import os

        os.environ["TRITON_F32_DEFAULT"] = "tf32"  # BAD
        torch.backends.cudnn.benchmark = True  # BAD
        torch.backends.cuda.matmul.allow_tf32 = False  # BAD
        torch._dynamo.config.cache_size_limit = 1  # BAD


        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                torch.manual_seed(0)  # BAD
                torch.set_default_dtype(torch.float64)  # BAD
                F.gelu = lambda x, approximate="none": x  # BAD

            def forward(self, x):
                return relu(x)
        """,
    ],
    # The allowlist (more cases, and the audit hook behind it, in test_static_allowlist.py).
    "import_allowlist": [
        """
        import os  # BAD
        from importlib import import_module  # BAD
        import torch.utils.cpp_extension  # BAD


        class ModelNew(nn.Module):
            def forward(self, x):
                return relu(x)
        """,
    ],
    "attribute_allowlist": [
        """
        class ModelNew(nn.Module):
            def forward(self, x):
                torch.serialization.os.system("true")  # BAD
                return torch._C._nn.relu(x)  # BAD
        """,
    ],
    "reflection": [
        """
        class ModelNew(nn.Module):
            def forward(self, x):
                parts = x.__class__.__mro__  # BAD
                name = "sync" + "hronize"
                getattr(self, name)  # BAD
                return relu(x)
        """,
    ],
    "decorator_allowlist": [
        """
        import functools


        @functools.singledispatch  # BAD
        def fast(x):
            return relu(x)


        class ModelNew(nn.Module):
            def forward(self, x):
                return fast(x)
        """,
    ],
}

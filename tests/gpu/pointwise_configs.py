"""Why the fused elementwise kernel runs at 0.89-0.94x eager on large pointwise problems (H200,
2026-12-02, problems/measurements/h200-2026-12-02-spare-judges/: ~3.7 TB/s against eager's ~4.2). Times
one-input, one-output kernels shaped as the pointwise template's (flat offsets, a mask, autotune-free
fixed configs) across BLOCK, warps, cache hints and a persistent grid-stride form, beside eager and
torch.compile on the same tensor.

    python3 tests/gpu/pointwise_configs.py [ELEMENTS]      (default 2**29)
    TRITON_INTERPRET=1 python3 tests/gpu/pointwise_configs.py 4099   (CPU: the per-call rows only)

Prints achieved bandwidth per variant (GB/s, read + write); asserts nothing. A diagnostic, not a test.

H200, 2026-12-02 (problems/measurements/h200-2026-12-02-comparison/pointwise.txt, 2**29 elements): the
best plain form matched eager within 1% for copy, silu and gelu, while the evaluator timed the built-in
gelu candidate at 0.92x eager. So first, each forward is timed one call at a time as the evaluator does
(eval/timing/protocol.Timer: L2 flushed, device idle, events around one call), in this process: eager,
the raw kernel, the raw kernel allocating its output, Triton's compiled kernel launched directly (no
binder, no cache lookup), and the built-in author's candidate (its launcher's host work on top), each
with its host time per call: which piece of one call's path costs. Never run to the end on a GPU yet.
"""
import sys
import tempfile
from pathlib import Path

import torch
import torch.nn.functional as F
import triton
import triton.language as tl
from candidates_vs_eager import load


@triton.jit
def _op(v, OP: tl.constexpr):
    """0: copy, 1: silu, 2: exact gelu (as the template's chain writes it)."""
    if OP == 1:
        v = v * tl.sigmoid(v)
    elif OP == 2:
        v = 0.5 * v * (1 + tl.math.erf(v * 0.7071067811865476))
    return v


@triton.jit
def _plain(out, x, n, BLOCK: tl.constexpr, OP: tl.constexpr, EVICT: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    if EVICT:
        v = tl.load(x + offs, mask=mask, other=0, eviction_policy="evict_first")
    else:
        v = tl.load(x + offs, mask=mask, other=0)
    v = _op(v, OP)
    if EVICT:
        tl.store(out + offs, v, mask=mask, cache_modifier=".cs")
    else:
        tl.store(out + offs, v, mask=mask)


@triton.jit
def _persistent(out, x, n, BLOCK: tl.constexpr, OP: tl.constexpr):
    start = tl.program_id(0) * BLOCK
    step = tl.num_programs(0) * BLOCK
    for base in range(start, n, step):
        offs = base + tl.arange(0, BLOCK)
        mask = offs < n
        v = _op(tl.load(x + offs, mask=mask, other=0, eviction_policy="evict_first"), OP)
        tl.store(out + offs, v, mask=mask, cache_modifier=".cs")


OPS = {"copy": (0, lambda t: t.clone()), "silu": (1, F.silu), "gelu": (2, F.gelu)}


def rate(fn, nbytes: int) -> float:  # noqa: ANN001
    ms = triton.testing.do_bench(fn, warmup=50, rep=300)
    return nbytes / ms / 1e6


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1 << 29
    if not torch.cuda.is_available():  # a dry run of the per-call rows under Triton's interpreter
        x = torch.randn(n)
        protocol(x, torch.empty_like(x))
        return
    x = torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    nbytes = 2 * x.numel() * x.element_size()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"{n} fp32 elements, {nbytes / 1e9:.2f} GB moved per call, {sms} SMs")
    protocol(x, out)
    for name, (op, eager) in OPS.items():
        rows = variants(x, out, op, eager, nbytes, sms)
        best = max(r for _, r in rows[2:])
        print(f"\n{name}: eager {rows[0][1]:.0f} GB/s, compile {rows[1][1]:.0f}, best ours {best:.0f}")
        for label, r in sorted(rows, key=lambda t: -t[1])[:12]:
            print(f"  {label:36} {r:7.0f} GB/s  {r / rows[0][1]:.3f}x eager")


def protocol(x: torch.Tensor, out: torch.Tensor) -> None:
    """One call at a time, as the evaluator times (L2 flushed, device idle, events around one call),
    each row adding one piece of the built-in candidate's per-call path to the one before: where
    its 5-10% against eager goes. `host us` is the wall time of back-to-back calls, per call, with
    the device's queue kept full: the host's cost alone."""
    import time

    from kernelskill.authors.base import AuthorTask
    from kernelskill.authors.builtin.author import BuiltinAuthor
    from kernelskill.eval.timing.protocol import Timer
    from kernelskill.state.records import Problem

    src = ("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"
           "class Model(nn.Module):\n    def forward(self, x):\n        return F.gelu(x)\n\n"
           f"def get_inputs():\n    return [torch.randn({x.numel()})]\n\n"
           "def get_init_inputs():\n    return []\n")
    cand = BuiltinAuthor().generate(AuthorTask(problem=Problem(name="gelu", path="gelu.py", source=src,
                                                               size="full"), device=x.device.type))
    # Imported from a file: Triton's @jit reads its function's source (exec of a string fails).
    path = Path(tempfile.mkdtemp(prefix="ks-pointwise-")) / "candidate.py"
    path.write_text(cand.source)
    model = load(str(path)).ModelNew().to(x.device)
    n = x.numel()
    grid = (triton.cdiv(n, 1024),)

    def raw(t: torch.Tensor, dest: torch.Tensor = out) -> object:
        return _plain[grid](dest, t, n, BLOCK=1024, OP=2, EVICT=False, num_warps=4)

    compiled = raw(x)  # Triton's compiled kernel: its launcher called directly skips the binder

    def direct(t: torch.Tensor) -> None:
        compiled[grid](out, t, n, 1024, 2, False)

    rows = {"eager F.gelu": F.gelu,
            "raw kernel, out preallocated": raw,
            "+ torch.empty for out": lambda t: raw(t, torch.empty_like(t)),
            "compiled kernel launched directly": direct,
            "built-in candidate": model}
    timer = Timer(x.device.type)
    sets = [[x]]
    print("one call at a time (the evaluator's protocol, this process):")
    for label, fn in rows.items():
        try:
            st = timer.time(fn, sets)
            fn(x)
            if x.is_cuda:
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(20):
                fn(x)
            host_us = (time.perf_counter() - t0) / 20 * 1e6  # the queue fills: the host's pace only
            if x.is_cuda:
                torch.cuda.synchronize()
            print(f"  {label:34} event {st.median_ms:.4f} ms  wall {st.wall_ms:.4f} ms  "
                  f"host {host_us:6.1f} us")
        except Exception as e:  # noqa: BLE001  # a diagnostic: say which row failed and go on
            print(f"  {label:34} failed: {type(e).__name__}: {str(e).splitlines()[0][:120]}")


def variants(x: torch.Tensor, out: torch.Tensor, op: int, eager, nbytes: int, sms: int) -> list:  # noqa: ANN001
    n = x.numel()
    rows = [("eager", rate(lambda: eager(x), nbytes))]
    compiled = torch.compile(eager)
    compiled(x)
    rows.append(("torch.compile", rate(lambda: compiled(x), nbytes)))
    for block in (1024, 2048, 4096, 8192, 16384):
        for warps in (4, 8, 16):
            if block // (32 * warps) < 4:
                continue  # fewer than 4 elements a thread: no 16-byte accesses
            for evict in (False, True):
                grid = (triton.cdiv(n, block),)
                fn = lambda b=block, w=warps, e=evict, g=grid: _plain[g](  # noqa: E731
                    out, x, n, BLOCK=b, OP=op, EVICT=e, num_warps=w)
                rows.append((f"plain B{block} w{warps}{' evict' if evict else ''}", rate(fn, nbytes)))
    for block, warps, waves in ((4096, 8, 4), (8192, 8, 2), (8192, 16, 4), (16384, 16, 2)):
        grid = (min(triton.cdiv(n, block), sms * waves),)
        fn = lambda b=block, w=warps, g=grid: _persistent[g](out, x, n, BLOCK=b, OP=op, num_warps=w)  # noqa: E731
        rows.append((f"persistent B{block} w{warps} x{waves}/SM", rate(fn, nbytes)))
    return rows

if __name__ == "__main__":
    main()

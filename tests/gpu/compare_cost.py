"""Where the evaluator's comparison time goes on a GPU. H200, 2026-12-02
(problems/measurements/h200-2026-12-02-spare-judges/): `correctness.compare`
summed to 4.4-7.6 s over an evaluation's ~9 trials on 0.5-1 G-element outputs (level1/11 gelu,
6000 x 90000: 7.6 s), where memory bandwidth says well under a second.

    python3 tests/gpu/compare_cost.py [ROWS COLS]      (default 6000 90000)

Times eval.compare.compare on plain tensors, then with the output in a slot of a private memory
pool as the judge's output slots are (wire.shared_like), then one chunk's steps one by one.
Prints milliseconds; asserts nothing.
"""
import sys
import time

import torch
import torch.nn.functional as F
from kernelskill.eval.candidate.wire import shared_like
from kernelskill.eval.judge.compare import CHUNK_ELEMENTS, compare


def timed(label: str, fn):  # noqa: ANN001, ANN201
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    value = fn()
    torch.cuda.synchronize()
    print(f"{label:44} {1e3 * (time.perf_counter() - t0):9.1f} ms", flush=True)
    return value


def main() -> None:
    rows, cols = (int(a) for a in sys.argv[1:3]) if len(sys.argv) > 2 else (6000, 90000)
    x = torch.randn(rows, cols, device="cuda")
    ref64 = timed("float64 reference (gelu)", lambda: F.gelu(x.double()))
    ref32 = timed("fp32 reference", lambda: F.gelu(x))
    out = timed("candidate stand-in", lambda: F.gelu(x) * (1 + 2**-22))
    for i in range(2):
        timed(f"compare, plain tensors #{i}", lambda: compare(out, ref64, ref32))
    slot = shared_like(out, torch.cuda.MemPool())
    for i in range(2):
        timed(f"compare, output in a shared slot #{i}", lambda: compare(slot, ref64, ref32))
    n = CHUNK_ELEMENTS // cols * cols
    o, r64, r32 = slot.reshape(-1)[:n], ref64.reshape(-1)[:n], ref32.reshape(-1)[:n]
    o64 = timed("one chunk: output .double()", lambda: o.double())
    timed("one chunk: isfinite + count (1 sync)", lambda: int((~torch.isfinite(o64)).sum()))
    diff = timed("one chunk: |o - r64|", lambda: torch.sub(o64, r64).abs_())
    timed("one chunk: |r32 - r64|", lambda: torch.sub(r32.double(), r64).abs_())
    timed("one chunk: max + norm (2 syncs)", lambda: (float(diff.max()), float(diff.norm())))
    timed(f"one chunk total ({n} elements)", lambda: compare(o, r64, r32))


if __name__ == "__main__":
    main()

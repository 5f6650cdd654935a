"""Speed of light: the minimum bytes and FLOPs of a forward against the GPU's measured ceilings.

Ceilings are measured once per GPU model (a large device-to-device copy, counting bytes read
plus written; a large fp32 matmul with TF32 off, with TF32 on, and in fp16) and cached on disk.
FLOPs come from PyTorch's FlopCounterMode (matmuls, convolutions, attention) and op_flops.py
(elementwise, reduction and normalization ops, per element; an order below their bytes' cost, so
memory-bound floors stay their bytes); the convolutions' share is counted apart, because the
precision policy rules on them apart. The floor is max(bytes / bandwidth, compute time), where
the convolutions' FLOPs run at the fastest rate the policy allows for convolutions (TF32 under
`default`) and every other FLOP at the fastest rate it allows for matmuls (fp32-accurate under
`default` and `strict`: see Ceilings.matmul_tflops).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import torch
from torch.utils import flop_counter

from ..harness import flatten
from ..sandbox.signing import sign
from .op_flops import elementwise_flops

if TYPE_CHECKING:
    from ..precision import Policy

# Rationale: a candidate may beat the FLOP floor legitimately (an algebraic rewrite skips the
# reference's FLOPs), and may read less than all of its inputs (triangular operands), but it
# cannot write its outputs and read most of its inputs faster than half the measured copy
# bandwidth allows. Below half the bytes floor, the timing or the correctness is wrong.
BELOW_FLOOR_FACTOR = 0.5
# FlopCounterMode's convolution ops (aten.convolution, cudnn_convolution, convolution_backward,
# _slow_conv2d_forward, ...); not "conv" alone, which would take prims.convert_element_type.
_CONV_OP = re.compile(r"conv(olution|_|\dd)")


class Work(NamedTuple):
    """One forward's work: all its FLOPs, its minimum bytes, and the convolutions' share of the
    FLOPs (the precision policy may allow TF32 for convolutions alone: eval/precision.py)."""

    flops: float
    bytes: float
    conv_flops: float = 0.0

    @classmethod
    def given(cls, values: Sequence[float] | None) -> Work | None:
        """A count handed over by an earlier evaluation ([flops, bytes, conv_flops]); None when
        there is none to take. A pair comes from before convolutions were counted apart: its conv
        FLOPs count as 0, so all its FLOPs take the matmul rate (a higher floor, never a lower)."""
        if values is None or len(values) not in (2, 3):
            return None
        return cls(*(float(v) for v in values))


@dataclass
class Ceilings:
    gpu: str
    bandwidth_gbs: float  # GB/s, device-to-device copy, read + write
    fp32_tflops: float  # fp32 matmul, TF32 off (cuBLAS: ~76% of the FFMA peak on an H200)
    measured_at: float
    tf32_tflops: float = 0.0  # TF32 tensor-core matmul; 0 in caches written before it was measured
    fp16_tflops: float = 0.0  # fp16 tensor-core matmul (fp32 accumulation); 0 likewise

    def matmul_tflops(self, allow_tf32: bool) -> float:
        """The fastest legal matmul rate under the precision policy. Strict fp32 may use
        error-compensated triples (three TF32 products, or three fp16 products of scaled hi / lo
        parts), so a third of the TF32 and fp16 rates counts too: on an H200 both beat cuBLAS
        fp32, and a floor ignoring them would sit above real kernels."""
        if allow_tf32:
            return max(self.tf32_tflops, self.fp32_tflops, self.fp16_tflops / 3)
        return max(self.fp32_tflops, self.tf32_tflops / 3, self.fp16_tflops / 3)


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kernelskill"


def _median_ms(fn: Any, reps: int) -> float:
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e))
    return sorted(times)[len(times) // 2]


def measure_ceilings() -> Ceilings:
    n = 1 << 28  # 1 GiB of fp32 each way: far beyond L2
    bufs = [torch.randn(n, device="cuda"), torch.empty(n, device="cuda")]
    copy_ms = _median_ms(lambda: bufs[1].copy_(bufs[0]), 10)
    bufs.clear()
    m = 8192
    a, b = torch.randn(m, m, device="cuda"), torch.randn(m, m, device="cuda")
    prev = torch.backends.cuda.matmul.allow_tf32
    halves = [a.half(), b.half()]
    f16_ms = _median_ms(lambda: halves[0] @ halves[1], 5)
    halves.clear()
    try:
        torch.backends.cuda.matmul.allow_tf32 = False
        mm_ms = _median_ms(lambda: a @ b, 5)
        torch.backends.cuda.matmul.allow_tf32 = True
        tf32_ms = _median_ms(lambda: a @ b, 5)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev
    return Ceilings(gpu=torch.cuda.get_device_name(), bandwidth_gbs=2 * n * 4 / copy_ms / 1e6,
                    fp32_tflops=2 * m**3 / mm_ms / 1e9, measured_at=time.time(),
                    tf32_tflops=2 * m**3 / tf32_ms / 1e9, fp16_tflops=2 * m**3 / f16_ms / 1e9)


def load_ceilings(path: Path | None = None) -> Ceilings:
    """Cached ceilings for this GPU model, measured on first use. In a sandboxed child the cache
    is the copy eval/timing/ceilings.py put in its scratch folder: a write lands there, never in the
    user's cache."""
    path = path or cache_dir() / "ceilings.json"
    gpu = torch.cuda.get_device_name()
    table: dict[str, Any] = {}
    if path.exists():
        try:
            table = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            table = {}
    if gpu in table and table[gpu].get("tf32_tflops") and table[gpu].get("fp16_tflops"):
        return Ceilings(**table[gpu])
    c = measure_ceilings()
    table[gpu] = asdict(c)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(table, indent=1))
    tmp.replace(path)
    return c


def main(argv: list[str] | None = None) -> int:
    """The trusted measuring child (eval/timing/ceilings.py): no candidate code runs in this process.
    Signs {"gpu", "entry"}: this GPU's ceilings, or None when the given table has them."""
    key = bytes.fromhex(sys.stdin.readline().strip())
    req_path, res_path, progress = (Path(a) for a in (argv or sys.argv[1:]))
    table = json.loads(req_path.read_text()).get("table") or {}
    progress.write_text("ceilings")
    gpu = torch.cuda.get_device_name()
    have = table.get(gpu) or {}
    entry = None if have.get("tf32_tflops") and have.get("fp16_tflops") else asdict(measure_ceilings())
    body = json.dumps({"gpu": gpu, "entry": entry})
    res_path.write_text(json.dumps({"result": body, "mac": sign(key, body)}))
    return 0


def tensor_bytes(obj: Any) -> int:
    return sum(t.numel() * t.element_size() for _, t in flatten(obj) if isinstance(t, torch.Tensor))


def _count_without_dynamo() -> None:
    """torch wraps FlopCounterMode's dispatch in `torch._disable_dynamo`, whose first call imports
    torch._dynamo (2.2 s of CPU on the CI machine, every CPU judge paid it) only to exclude the
    function from a tracer; no count here runs under one. The wrapper caches its excluded form on
    the wrapped function: caching the function itself there skips the import. Where torch is
    shaped otherwise nothing changes (the import happens as before)."""
    mode = getattr(flop_counter, "_FlopCounterMode", None)
    raw = getattr(vars(mode).get("__torch_dispatch__") if mode else None, "__wrapped__", None)
    if callable(raw) and getattr(raw, "__dynamo_disable", None) is None:
        raw.__dynamo_disable = raw


def count_work(model: torch.nn.Module, inputs: list[Any]) -> Work:
    """One forward's FLOPs (convolutions apart too) and minimum bytes: inputs + parameters +
    buffers + outputs, each once."""
    _count_without_dynamo()
    counter = flop_counter.FlopCounterMode(display=False, custom_mapping=elementwise_flops())
    with torch.no_grad(), counter:
        out = model(*inputs)
    state = list(model.parameters()) + list(model.buffers())
    nbytes = tensor_bytes(inputs) + tensor_bytes(state) + tensor_bytes(out)
    per_op = counter.get_flop_counts().get("Global", {})
    conv = sum(n for op, n in per_op.items() if _CONV_OP.search(getattr(op, "__name__", str(op))))
    return Work(float(counter.get_total_flops()), float(nbytes), float(conv))


def floor_ms(flops: float, nbytes: float, c: Ceilings, matmul_tf32: bool = False, *,
             conv_flops: float = 0.0, conv_tf32: bool | None = None) -> float:
    """Speed of light: the bytes at the copy bandwidth or the FLOPs at the fastest legal rates,
    whichever takes longer. `conv_flops` (part of `flops`) run at the rate `conv_tf32` allows
    (None: as `matmul_tf32`), the rest at the rate `matmul_tf32` allows."""
    conv = min(max(conv_flops, 0.0), flops)
    conv_rate = c.matmul_tflops(matmul_tf32 if conv_tf32 is None else conv_tf32)
    compute_ms = (flops - conv) / (c.matmul_tflops(matmul_tf32) * 1e9) + conv / (conv_rate * 1e9)
    return max(bytes_floor_ms(nbytes, c), compute_ms)


def policy_floor_ms(work: Work, c: Ceilings, p: Policy) -> float:
    """The floor the judge and the profiler report: `work` at the fastest rates policy `p` allows."""
    return floor_ms(work.flops, work.bytes, c, p.matmul_tf32, conv_flops=work.conv_flops,
                    conv_tf32=p.conv_tf32)


def bytes_floor_ms(nbytes: float, c: Ceilings) -> float:
    return nbytes / (c.bandwidth_gbs * 1e6)


if __name__ == "__main__":
    raise SystemExit(main())

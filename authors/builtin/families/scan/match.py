"""What the scan templates match (a supported input dtype, a valid dim, one float output) and the
tile configurations their kernels are tuned over."""

from __future__ import annotations

from ...frontend.ir import Region, Value

SCAN_DTYPES = ("torch.float32", "torch.float16", "torch.bfloat16")

# Rationale (H200: 132 SMs, 4.3 TB/s, 64K registers per SM): a scan is a stream, so what
# matters is bytes in flight. 4096-element tiles with 4 warps keep 32 fp32 per thread (8 x
# 16-byte loads) at 80 registers (sm_90 cubin), so 6 programs fit per SM and ~100 KB per SM
# are in flight, well over the ~35 KB per SM that 4.3 TB/s x ~1 us latency needs. Wider tiles
# with 8 warps help very long rows; smaller ones help many short rows (less masked waste).
ROW_CONFIGS = [({"TILE": 4096}, 4, 2), ({"TILE": 2048}, 4, 2), ({"TILE": 8192}, 8, 2),
               ({"TILE": 4096}, 8, 3), ({"TILE": 2048}, 2, 2)]
# Lanes are contiguous: 64 lanes = two 128-byte lines per tile row; fewer lanes give more
# programs (no wave tail when O x I / 64 is close to the number of resident programs). Lanes that
# fill whole warps (LANES = 32 x num_warps x 4 per thread) keep the scanned axis inside each thread.
# Measured on an H200 (do_bench, lane kernel autotuned over each list): a reverse cumsum over dim 1
# of a (64, 8000, 1024) fp32 tensor ran 1.459 ms with the old list (pick LANES 64 / TILE 4096 /
# 4 warps) and 1.196 ms with this one (pick 256 / 8192 / 2 warps; alone, 32 / 1024 / 1 warp ran
# 1.235, 128 / 4096 / 1 warp 1.362, 256 / 4096 / 2 and 512 / 8192 / 4 1.375). On (8, 8000, 1024),
# chunked, 32 / 1024 / 1 warp wins (0.232 ms, old list 0.265). The old entries of 16-64 lanes and
# 4 warps stay for short lanes and chunked scans (an exclusive scan of (64, 4000, 64), a transposed
# (30000, 300) matrix pick them; those cases ran within noise of the old list); (128, 4096, 8
# warps), (256, 4096, 4) and (128, 2048, 4 warps, 3 stages) were never picked and are dropped.
# The first entry is the only one used under the CPU interpreter (_configs).
COL_CONFIGS = [({"LANES": 64, "TILE": 2048}, 4, 2), ({"LANES": 32, "TILE": 2048}, 4, 2),
               ({"LANES": 16, "TILE": 1024}, 2, 2), ({"LANES": 64, "TILE": 4096}, 4, 2),
               ({"LANES": 256, "TILE": 8192}, 2, 2), ({"LANES": 256, "TILE": 4096}, 2, 2),
               ({"LANES": 512, "TILE": 8192}, 4, 2), ({"LANES": 128, "TILE": 4096}, 1, 2),
               ({"LANES": 32, "TILE": 1024}, 1, 2)]


def scan_dim(v: Value, dim: object) -> int | None:
    """`dim` normalised against the rank of `v`, or None when it is not a plain int in range."""
    if not isinstance(dim, int) or isinstance(dim, bool) or v.meta is None:
        return None
    rank = v.meta.rank
    if rank == 0 or not -rank <= dim < rank:
        return None
    return dim % rank


def scan_input_ok(v: Value) -> bool:
    return v.is_tensor and str(v.meta.dtype) in SCAN_DTYPES


def scan_region_ok(region: Region, dim: int | None) -> bool:
    """Checks shared by the scan templates: a float input of a supported dtype, a valid dim, and
    (for fused chains) outputs of a dtype the store can take."""
    a = region.anchor
    if a is None or dim is None or not a.inputs or not scan_input_ok(a.inputs[0]) or a.out.meta is None:
        return False
    if a.out.meta.dtype != a.inputs[0].meta.dtype or a.out.meta.shape != a.inputs[0].meta.shape:
        return False
    if len(region.outputs) > 1:
        return False
    final = region.epilogue[-1].out if region.epilogue else a.out
    return final.meta is not None and final.meta.dtype.is_floating_point

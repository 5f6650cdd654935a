"""Hand-written retrieval table: (profile signature, skill ids that belong in the top 3).

Signatures are written the way the profiler renders a Profile. A case passes when at least one
of its ids is among the top 3 hits (guardrails excluded, strict fp32 and training mode unless
the case says otherwise). Shared by the test and by anyone tuning the ranking weights.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    signature: str
    want: tuple[str, ...]
    allow_tf32: bool = False
    training: bool = True


CASES: list[Case] = [
    Case("bottleneck: memory-bound; 4.1x over speed of light; DRAM 85% of peak, SM 12%; occupancy 88%\n"
         "structure: elementwise; ops: relu, add, mul, clamp, sigmoid\n"
         "kernels: 5 launches per forward; top kernel 22% of time (elementwise); host gaps 3 us",
         ("fuse-elementwise-chain",)),
    Case("bottleneck: memory-bound; 1.9x over speed of light; DRAM 71% of peak, SM 35%; occupancy 50%\n"
         "structure: gemm, elementwise; ops: linear, gelu, mul, add\n"
         "kernels: 4 launches per forward; top kernel 55% of time (gemm); host gaps 4 us",
         ("gemm-epilogue-fusion",)),
    Case("bottleneck: compute-bound; 1.3x over speed of light; DRAM 20% of peak, SM 76%; occupancy 25%\n"
         "structure: gemm; ops: matmul\n"
         "kernels: 1 launches per forward; top kernel 100% of time (gemm); host gaps 0 us",
         ("gemm-tf32x3-strict-fp32", "gemm-tile-shapes", "gemm-grouped-tile-order")),
    Case("bottleneck: compute-bound; 1.3x over speed of light; DRAM 20% of peak, SM 76%; occupancy 25%\n"
         "structure: gemm; ops: matmul\n"
         "kernels: 1 launches per forward; top kernel 100% of time (gemm); host gaps 0 us",
         ("gemm-tf32-tensor-cores",), allow_tf32=True),
    Case("bottleneck: latency-bound; 6.0x over speed of light; DRAM 15% of peak, SM 4%; occupancy 12%\n"
         "structure: gemm; ops: matmul\n"
         "kernels: 1 launches per forward; top kernel 100% of time (gemm, 4 output tiles, K=131072)",
         ("gemm-split-k",)),
    Case("bottleneck: memory-bound; 1.6x over speed of light; DRAM 55% of peak, SM 8%; occupancy 40%\n"
         "structure: gemm; ops: matmul (matrix-vector, N=1)\n"
         "kernels: 1 launches per forward; top kernel 100% of time (gemv)",
         ("gemv-bandwidth-kernel",)),
    Case("bottleneck: memory-bound; 2.8x over speed of light; DRAM 45% of peak, SM 10%; occupancy 70%\n"
         "structure: row-reduction; ops: softmax\n"
         "kernels: 1 launches per forward; top kernel 100% of time (softmax)",
         ("online-softmax",)),
    Case("bottleneck: latency-bound; 61x over speed of light; DRAM 3% of peak, SM 2%; occupancy 10%\n"
         "structure: normalization, row-reduction; ops: layer_norm\n"
         "kernels: 1 launches per forward; top kernel 100% of time (16 blocks for 16 rows)",
         ("split-row-reduction",)),
    Case("bottleneck: memory-bound; 2.5x over speed of light; DRAM 50% of peak, SM 20%; occupancy 60%\n"
         "structure: normalization, row-reduction, elementwise; ops: add, layer_norm, gelu\n"
         "kernels: 3 launches per forward; top kernel 48% of time (layer_norm); host gaps 3 us",
         ("fused-layer-rms-norm", "vertical-fusion-across-ops")),
    Case("bottleneck: latency-bound; 4.0x over speed of light; DRAM 25% of peak, SM 6%; occupancy 30%\n"
         "structure: normalization, column-reduction; ops: batch_norm\n"
         "kernels: 2 launches per forward; top kernel 70% of time (batch_norm statistics)",
         ("two-level-norm-statistics", "column-reduction-coalesced")),
    Case("bottleneck: memory-bound; 3.0x over speed of light; DRAM 30% of peak, SM 5%; occupancy 45%\n"
         "structure: column-reduction; ops: sum\n"
         "kernels: 1 launches per forward; top kernel 100% of time (reduce over dim 0)",
         ("column-reduction-coalesced",)),
    Case("bottleneck: memory-bound; 2.2x over speed of light; DRAM 40% of peak, SM 9%; occupancy 60%\n"
         "structure: row-reduction; ops: argmax\n"
         "kernels: 1 launches per forward; top kernel 100% of time (argmax)",
         ("argmax-index-tracking",)),
    Case("bottleneck: memory-bound; 3.6x over speed of light; DRAM 28% of peak, SM 6%; occupancy 50%\n"
         "structure: scan; ops: cumsum\n"
         "kernels: 1 launches per forward; top kernel 100% of time (scan)",
         ("single-pass-block-scan",)),
    Case("bottleneck: memory-bound; 3.9x over speed of light; DRAM 60% of peak, SM 8%; occupancy 50%\n"
         "structure: scan; ops: flip, cumsum, flip\n"
         "kernels: 3 launches per forward; top kernel 40% of time (scan); host gaps 3 us",
         ("reverse-scan-index-math",)),
    Case("bottleneck: memory-bound; 3.5x over speed of light; DRAM 30% of peak, SM 6%; occupancy 50%\n"
         "structure: scan; ops: cumprod\n"
         "kernels: 1 launches per forward; top kernel 100% of time (scan)",
         ("associative-scan-combine", "single-pass-block-scan")),
    Case("bottleneck: memory-bound; 3.7x over speed of light; DRAM 35% of peak, SM 7%; occupancy 55%\n"
         "structure: loss, row-reduction; ops: cross_entropy, log_softmax, nll_loss, mean\n"
         "kernels: 4 launches per forward; top kernel 45% of time (log_softmax); host gaps 4 us",
         ("fused-row-loss",)),
    Case("bottleneck: memory-bound; 3.2x over speed of light; DRAM 45% of peak, SM 6%; occupancy 60%\n"
         "structure: loss, elementwise; ops: sub, pow, mean (mse_loss)\n"
         "kernels: 3 launches per forward; top kernel 40% of time (reduce); host gaps 3 us",
         ("elementwise-loss-grid-reduction",)),
    Case("bottleneck: memory-bound; 15.3x over speed of light; DRAM 40% of peak, SM 30%; occupancy 40%\n"
         "structure: conv-transpose, elementwise, normalization, pooling; "
         "ops: conv_transpose3d, add, clamp, group_norm, max_pool3d\n"
         "kernels: 6 launches per forward; top kernel 45% of time (conv_transpose); host gaps 5 us",
         ("vendor-conv-fused-tail", "conv-transpose-gather")),
    Case("bottleneck: compute-bound; 6.2x over speed of light; DRAM 20% of peak, SM 60%; occupancy 35%\n"
         "structure: conv-transpose; ops: conv_transpose2d\n"
         "kernels: 2 launches per forward; top kernel 90% of time (conv_transpose dgrad)",
         ("conv-transpose-gather",)),
    Case("bottleneck: memory-bound; 5.0x over speed of light; DRAM 35% of peak, SM 15%; occupancy 50%\n"
         "structure: conv; ops: conv2d (depthwise, groups=channels)\n"
         "kernels: 1 launches per forward; top kernel 100% of time (depthwise conv)",
         ("depthwise-conv-direct",)),
    Case("bottleneck: compute-bound; 2.0x over speed of light; DRAM 30% of peak, SM 55%; occupancy 40%\n"
         "structure: conv; ops: conv2d (1x1 kernel, stride 1)\n"
         "kernels: 3 launches per forward; top kernel 80% of time (conv, with nchw to nhwc transposes)",
         ("pointwise-conv-as-gemm", "channels-last-layout")),
    Case("bottleneck: compute-bound; 7.4x over speed of light; DRAM 25% of peak, SM 45%; occupancy 30%\n"
         "structure: conv, elementwise; ops: conv3d, relu, add\n"
         "kernels: 3 launches per forward; top kernel 85% of time (conv3d)",
         ("conv3d-implicit-gemm", "vendor-conv-fused-tail")),
    Case("bottleneck: compute-bound; 2.9x over speed of light; DRAM 22% of peak, SM 65%; occupancy 35%\n"
         "structure: conv; ops: conv2d\n"
         "kernels: 1 launches per forward; top kernel 100% of time (implicit gemm conv)",
         ("conv-implicit-gemm", "gemm-tf32x3-strict-fp32")),
    Case("bottleneck: memory-bound; 4.7x over speed of light; DRAM 30% of peak, SM 10%; occupancy 55%\n"
         "structure: pooling; ops: max_pool2d\n"
         "kernels: 1 launches per forward; top kernel 100% of time (pooling)",
         ("fused-pooling-window",)),
    Case("bottleneck: memory-bound; 3.1x over speed of light; DRAM 35% of peak, SM 8%; occupancy 50%\n"
         "structure: pooling, row-reduction, gemm; ops: relu, adaptive_avg_pool2d, flatten, linear\n"
         "kernels: 4 launches per forward; top kernel 50% of time (adaptive average pool)",
         ("global-pool-as-row-reduction",)),
    Case("bottleneck: memory-bound; 5.0x over speed of light; DRAM 70% of peak, SM 30%; occupancy 45%\n"
         "structure: attention, gemm, row-reduction; ops: matmul, div, softmax, matmul\n"
         "kernels: 4 launches per forward; top kernel 40% of time (softmax over S x S scores)",
         ("flash-attention-tiling",)),
    Case("bottleneck: compute-bound; 4.0x over speed of light; DRAM 40% of peak, SM 50%; occupancy 40%\n"
         "structure: attention, gemm, row-reduction; ops: matmul, masked_fill, tril, softmax, matmul\n"
         "kernels: 6 launches per forward; top kernel 35% of time (gemm)",
         ("causal-tile-skipping", "flash-attention-tiling")),
    Case("bottleneck: launch-bound; 12x over speed of light; DRAM 4% of peak, SM 3%; occupancy 20%\n"
         "structure: recurrent, gemm, elementwise; ops: lstm, linear\n"
         "kernels: 412 launches per forward; top kernel 6% of time (gemm); host gaps 6 us",
         ("rnn-fused-gates", "cuda-graph-replay", "persistent-rnn-time-loop")),
    Case("bottleneck: launch-bound; 8.0x over speed of light; DRAM 5% of peak, SM 3%; occupancy 30%\n"
         "structure: multi-kernel-graph, gemm, elementwise; ops: linear, relu, linear, relu, linear\n"
         "kernels: 96 launches per forward; top kernel 4% of time (gemm); host gaps 9 us",
         ("cuda-graph-replay", "trim-host-overhead", "vertical-fusion-across-ops")),
    Case("bottleneck: occupancy-limited; 2.1x over speed of light; DRAM 30% of peak, SM 25%; occupancy 18%\n"
         "structure: row-reduction, normalization; ops: layer_norm\n"
         "kernels: 1 launches per forward; top kernel 100% of time (255 registers, 1024 B spills)",
         ("reduce-register-pressure",)),
    Case("bottleneck: compute-bound; 400x over speed of light; DRAM 10% of peak, SM 80%; occupancy 30%\n"
         "structure: gemm; ops: diag, matmul\n"
         "kernels: 2 launches per forward; top kernel 98% of time (gemm)",
         ("diagonal-matmul-as-scale",)),
    Case("bottleneck: compute-bound; 30x over speed of light; DRAM 15% of peak, SM 75%; occupancy 30%\n"
         "structure: gemm, row-reduction; ops: linear, sum\n"
         "kernels: 2 launches per forward; top kernel 95% of time (gemm)",
         ("reduction-of-products",)),
    Case("bottleneck: compute-bound; 2.5x over speed of light; DRAM 15% of peak, SM 75%; occupancy 30%\n"
         "structure: gemm; ops: matmul, tril\n"
         "kernels: 2 launches per forward; top kernel 90% of time (gemm)",
         ("triangular-matmul-skip-tiles",)),
    Case("bottleneck: compute-bound; 50x over speed of light; DRAM 10% of peak, SM 80%; occupancy 30%\n"
         "structure: gemm; ops: matmul, matmul (matrix times matrix times vector)\n"
         "kernels: 2 launches per forward; top kernel 99% of time (gemm)",
         ("matmul-reassociation",)),
    Case("bottleneck: memory-bound; 2.0x over speed of light; DRAM 60% of peak, SM 20%; occupancy 50%\n"
         "structure: conv, normalization, elementwise; ops: conv2d, batch_norm, relu\n"
         "kernels: 3 launches per forward; top kernel 60% of time (conv)",
         ("fold-batchnorm-into-conv",), training=False),
    Case("bottleneck: launch-bound; 3.0x over speed of light; DRAM 10% of peak, SM 8%; occupancy 30%\n"
         "structure: multi-kernel-graph, gemm; ops: linear, linear, linear (independent q, k, v)\n"
         "kernels: 9 launches per forward; top kernel 12% of time (gemm); host gaps 7 us",
         ("horizontal-fusion", "cuda-graph-replay")),
    Case("softmax over long rows is slow", ("online-softmax", "split-row-reduction")),
    Case("many tiny kernels with idle gaps between launches", ("cuda-graph-replay", "trim-host-overhead",
                                                               "horizontal-fusion")),
]

#!/bin/bash
# Call 1 on a fresh machine (carries .gpu): the compile seconds of a first forward, serial against a
# thread pool's compile-only pass first (tests/gpu/parallel_compile.py, on level1/01's and level3/05's
# delivered solutions in ../h100-2026-12-07-target-variants/rounds-b/problem-folders.tar.gz); then
# level1/01's judged in full and as later rounds judge (rank timing, with and without the full
# evaluation's autotuning picks) to size the gap between a rank median and a full one.
KS_START=$(date +%s); cd "$(dirname "$0")/../../.." || exit 1; . tests/gpu/host_setup.sh
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
D=.cmp/delivered; mkdir -p $D && tar xzf problems/measurements/h100-2026-12-07-target-variants/rounds-b/problem-folders.tar.gz -C $D
timeout $(left 170) python3 tests/gpu/parallel_compile.py problems/level1/01_matmul_square.py:$D/level1/01_matmul_square/solution.py \
    problems/level3/05_mobilenet_inverted_residual.py:$D/level3/05_mobilenet_inverted_residual/solution.py > "$OUT/call1_parallel_compile.txt" 2>&1
echo "parallel_compile rc=$? $(($(date +%s)-KS_START))s"
timeout $(left 300) python3 tests/gpu/cheap_rounds.py --repeat 2 \
    problems/level1/01_matmul_square.py:$D/level1/01_matmul_square/solution.py > "$OUT/call1_rank_vs_full.txt" 2>&1
echo "rank_vs_full rc=$? $(($(date +%s)-KS_START))s"
cut -c1-400 "$OUT/call1_parallel_compile.txt"
cut -c1-260 "$OUT/call1_rank_vs_full.txt" | grep -v Warning

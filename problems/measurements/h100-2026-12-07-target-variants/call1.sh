#!/bin/bash
# Call 1 on a fresh machine (carries .gpu; no embedding model yet, so no bench): the depthwise and
# split-d attention variants timed against their first candidates in one process, the judge gap of
# level3/11's first candidate, then torch.compile's caches filled for the round table's sample.
KS_START=$(date +%s); cd "$(dirname "$0")/../../.." || exit 1; . tests/gpu/host_setup.sh
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
FC="python3 tests/gpu/first_candidates.py --precision default"
V='{"skill":"depthwise-conv-direct","params":'
timeout $(left 230) $FC --variant "$V"'{"index_math":"hoisted","tiles":"rows_per_thread"}}' \
    --variant "$V"'{"index_math":"hoisted"}}' --variant "$V"'{"tiles":"rows_per_thread"}}' \
    problems/level3/05_mobilenet_inverted_residual.py problems/level1/47_conv2d_depthwise.py \
    > "$OUT/call1_depthwise.txt" 2>&1; echo "depthwise rc=$? $(($(date +%s)-KS_START))s"
A='{"skill":"flash-attention-tiling","params":'
timeout $(left 300) $FC --variant "$A"'{"split_d":true}}' --variant "$A"'{"head_major":true,"split_d":true}}' \
    problems/level3/15_sdpa_additive_mask.py > "$OUT/call1_split_d.txt" 2>&1; echo "split_d rc=$? $(($(date +%s)-KS_START))s"
timeout $(left 340) $FC --out .cmp/fc problems/level3/11_squeeze_excitation_block.py \
    > "$OUT/call1_l3_11.txt" 2>&1; echo "fc l3/11 rc=$? $(($(date +%s)-KS_START))s"
timeout $(left 500) python3 tests/gpu/judge_gap.py --repeat 2 --candidates .cmp/fc \
    problems/level3/11_squeeze_excitation_block.py > "$OUT/call1_judge_gap.txt" 2>&1
echo "judge_gap rc=$? $(($(date +%s)-KS_START))s"
timeout $(left 565) python3 tests/gpu/prewarm_compile_cache.py --precision default 14 \
    $(cat tests/gpu/rounds_sample.txt) > "$OUT/call1_prewarm.txt" 2>&1
echo "prewarm rc=$? $(($(date +%s)-KS_START))s: $(grep -c FAILED "$OUT/call1_prewarm.txt") failed"
cat "$OUT"/call1_depthwise.txt "$OUT"/call1_split_d.txt "$OUT"/call1_l3_11.txt | cut -c1-400
tail -40 "$OUT/call1_judge_gap.txt" | cut -c1-300

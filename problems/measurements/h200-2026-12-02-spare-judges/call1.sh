#!/bin/bash
# Call 1 (H200, 2026-12-02): the 16-problem subset of h200-2026-12-02-cost/ through the evaluator with spare judges
# (built-in first candidates, default policy: issues 22 and 23 re-measured after the launch-plan
# change), then the split-judge and spare-judge GPU tests and the 7.6 GB memory test (issue 20).
KS_START=$(date +%s); cd "$(dirname "$0")/../../.." || exit 1; . tests/gpu/host_setup.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,memory.used --format=csv,noheader
P=problems; M=$P/measurements
SET="$P/level1/01_matmul_square.py $P/level1/02_matmul_batched.py $P/level1/05_matvec.py $P/level1/09_matmul_large_k.py
 $P/level1/11_gelu.py $P/level1/16_layernorm_last_dim.py $P/level1/17_rmsnorm.py $P/level1/22_softmax_last_dim.py
 $P/level1/25_mean_last_dim.py $P/level1/31_reverse_cumsum.py $P/level1/39_maxpool2d.py $P/level2/01_linear_gelu_scale.py
 $P/level2/13_linear_swiglu.py $P/level2/02_conv2d_batchnorm_relu.py $P/level2/17_conv2d_gelu_global_avgpool.py $P/level3/01_mlp.py"
timeout 100 python3 tests/gpu/prewarm_compile_cache.py --precision default 14 $SET > $OUT/prewarm.txt 2>&1
echo "prewarm $(($(date +%s)-KS_START))s: $(grep -c FAILED $OUT/prewarm.txt) failed"
echo "== evalset, spare judges ($(left)s left)"
KS_SPARES=1 timeout $(( $(left) - 130 )) python3 $M/h200-2026-12-02-judge/evalset.py default $OUT/evalset.jsonl $SET > $OUT/evalset.txt 2>&1
sed -n '/^problem /,$p' $OUT/evalset.txt
python3 $M/h200-2026-12-02-spare-judges/compare.py $M/h200-2026-12-02-cost/call3_evalset.jsonl $OUT/evalset.jsonl
echo "== judge + spare GPU tests ($(left)s left)"
timeout $(( $(left) - 60 )) python3 -m pytest -q -s -p no:cacheprovider -m gpu -k "not level1_builtin" \
    tests/gpu/test_judge_split.py tests/eval/test_spare_judge.py > $OUT/judge.txt 2>&1; echo "rc=$?"
grep -E "passed|failed|FAILED|Error|start-up|spare|evaluation [0-9]" $OUT/judge.txt | cut -c1-300 | tail -20
echo "== memory test ($(left)s left)"
timeout $(( $(left) - 3 )) python3 -m pytest -q -s -p no:cacheprovider tests/gpu/test_eval_memory_on_gpu.py > $OUT/mem.txt 2>&1; echo "rc=$?"
grep -E "peak|passed|failed|correct" $OUT/mem.txt | cut -c1-300 | tail -6
echo "done $(($(date +%s)-KS_START))s"

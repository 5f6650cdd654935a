#!/bin/bash
# Call 1: the evaluator on the H200 (sandbox layers, split-judge GPU tests), the built-in first
# candidates of 15 suite problems through it (default policy), the 7.6 GB memory test.
START=$(date +%s); cd "$(dirname "$0")/.."; . .gpu/setup.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.used --format=csv,noheader
python3 -c "import torch, triton, kernelskill, langgraph, chromadb; print(torch.__version__, triton.__version__)"
P=problems
SET="$P/level1/01_matmul_square.py $P/level1/02_matmul_batched.py $P/level1/05_matvec.py $P/level1/09_matmul_large_k.py
 $P/level1/11_gelu.py $P/level1/16_layernorm_last_dim.py $P/level1/17_rmsnorm.py $P/level1/22_softmax_last_dim.py
 $P/level1/25_mean_last_dim.py $P/level1/31_reverse_cumsum.py $P/level1/39_maxpool2d.py $P/level2/01_linear_gelu_scale.py
 $P/level2/04_linear_layernorm_residual.py $P/level2/13_linear_swiglu.py $P/level3/01_mlp.py"
CONV=$(ls $P/level2/*conv*.py)
# torch.compile caches for the baselines, in parallel, while the sandbox is probed (CPU-bound compiles)
(timeout 240 python3 tests/gpu/prewarm_compile_cache.py --precision default 12 $SET $CONV > $OUT/prewarm.txt 2>&1; echo "prewarm done $(($(date +%s)-START))s" >> $OUT/prewarm.txt) &
python3 -m kernelskill.cli eval --sandbox-report 2>&1 | tee $OUT/sandbox.txt
wait
tail -3 $OUT/prewarm.txt
echo "== judge tests ($(left)s left)"
timeout $(( $(left) - 330 )) python3 -m pytest -q -s -p no:cacheprovider tests/gpu/test_judge_split.py > $OUT/judge.txt 2>&1; echo "rc=$?"
grep -E "passed|failed|correct=|FAILED|Error" $OUT/judge.txt | tail -25
echo "== evalset ($(left)s left)"
timeout $(( $(left) - 100 )) python3 .gpu/evalset.py default $OUT/evalset.jsonl $SET > $OUT/evalset.txt 2>&1
sed -n '/^problem /,$p' $OUT/evalset.txt
echo "== memory test ($(left)s left)"
timeout $(( $(left) - 5 )) python3 -m pytest -q -s -p no:cacheprovider tests/gpu/test_eval_memory_on_gpu.py > $OUT/mem.txt 2>&1; echo "rc=$?"
tail -12 $OUT/mem.txt

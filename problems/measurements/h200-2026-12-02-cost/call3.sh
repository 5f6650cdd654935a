#!/bin/bash
# H200, 2026-12-02, call 3: the GPU subset re-measured after the cost and touch changes (16 suite problems'
# built-in first candidates through the evaluator, default policy), the split-judge GPU tests, and
# the 7.6 GB memory test.
START=$(date +%s); cd "$(dirname "$0")/.."; . .gpu/setup.sh
P=problems
SET="$P/level1/01_matmul_square.py $P/level1/02_matmul_batched.py $P/level1/05_matvec.py $P/level1/09_matmul_large_k.py
 $P/level1/11_gelu.py $P/level1/16_layernorm_last_dim.py $P/level1/17_rmsnorm.py $P/level1/22_softmax_last_dim.py
 $P/level1/25_mean_last_dim.py $P/level1/31_reverse_cumsum.py $P/level1/39_maxpool2d.py $P/level2/01_linear_gelu_scale.py
 $P/level2/13_linear_swiglu.py $P/level2/02_conv2d_batchnorm_relu.py $P/level2/17_conv2d_gelu_global_avgpool.py $P/level3/01_mlp.py"
timeout 100 python3 tests/gpu/prewarm_compile_cache.py --precision default 14 $SET > $OUT/prewarm.txt 2>&1
echo "prewarm $(($(date +%s)-START))s: $(grep -c FAILED $OUT/prewarm.txt) failed"
echo "== evalset ($(left 470)s left)"
timeout $(( $(left 470) - 150 )) python3 .gpu/evalset.py default $OUT/evalset.jsonl $SET > $OUT/evalset.txt 2>&1
sed -n '/^problem /,$p' $OUT/evalset.txt
python3 - $OUT/evalset.jsonl <<'PY'
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l); s = r.get("seconds") or {}
    print(f"{r['problem'][:40]:40} eval {r.get('eval_s')} judge {r.get('judge_s')} start {s.get('processes.start')} "
          f"compile {s.get('compile')} correctness {s.get('correctness')} timing {s.get('timing')} (cand {s.get('timing.candidate')} tc {s.get('timing.torch_compile')})")
PY
echo "== judge tests ($(left 470)s left)"
timeout $(( $(left 470) - 70 )) python3 -m pytest -q -s -p no:cacheprovider tests/gpu/test_judge_split.py -k "not level1" > $OUT/judge.txt 2>&1; echo "rc=$?"
grep -E "passed|failed|correct=|FAILED|Error|ratio|eager =|evaluation " $OUT/judge.txt | tail -25
echo "== memory test ($(left 470)s left)"
timeout $(( $(left 470) - 3 )) python3 -m pytest -q -s -p no:cacheprovider tests/gpu/test_eval_memory_on_gpu.py > $OUT/mem.txt 2>&1; echo "rc=$?"
grep -E "peak|passed|failed|correct|Error" $OUT/mem.txt | tail -6
echo "done $(($(date +%s)-START))s"

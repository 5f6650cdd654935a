#!/bin/bash
# Call 2 (after the rebuild-cycle fix): 15 suite problems' built-in first candidates through the
# evaluator (default policy), the 7.6 GB memory test, then the convolution-led level-2 problems.
START=$(date +%s); cd "$(dirname "$0")/.."; . .gpu/setup.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,memory.used --format=csv,noheader
P=problems
SET="$P/level1/01_matmul_square.py $P/level1/02_matmul_batched.py $P/level1/05_matvec.py $P/level1/09_matmul_large_k.py
 $P/level1/11_gelu.py $P/level1/16_layernorm_last_dim.py $P/level1/17_rmsnorm.py $P/level1/22_softmax_last_dim.py
 $P/level1/25_mean_last_dim.py $P/level1/31_reverse_cumsum.py $P/level1/39_maxpool2d.py $P/level2/01_linear_gelu_scale.py
 $P/level2/04_linear_layernorm_residual.py $P/level2/13_linear_swiglu.py $P/level3/01_mlp.py"
CONV=$(ls $P/level2/*conv*.py)
timeout 120 python3 tests/gpu/prewarm_compile_cache.py --precision default 14 $SET $CONV > $OUT/prewarm.txt 2>&1
echo "prewarm $(($(date +%s)-START))s: $(grep -c FAILED $OUT/prewarm.txt) failed"
echo "== memory test ($(left)s left)"
timeout 110 python3 -m pytest -q -s -p no:cacheprovider tests/gpu/test_eval_memory_on_gpu.py > $OUT/mem.txt 2>&1; echo "rc=$?"
grep -E "peak|passed|failed|correct" $OUT/mem.txt | tail -6
echo "== evalset ($(left)s left)"
timeout $(( $(left) - 10 )) python3 .gpu/evalset.py default $OUT/evalset.jsonl $SET $CONV > $OUT/evalset.txt 2>&1
python3 - $OUT/evalset.jsonl <<'PY'
import json, sys
print(f"{'problem':48} ok {'ours':>7} {'eager':>7} {'comp':>7} {'xE':>5} {'xC':>5} {'ev s':>5} {'judge':>5}")
for l in open(sys.argv[1]):
    r = json.loads(l); ok = r.get("correct"); o, e, c = r.get("runtime_ms"), r.get("eager_ms"), r.get("compile_ms")
    f = lambda v: f"{v:7.3f}" if isinstance(v, float) else "      -"
    print(f"{r['problem'][:48]:48} {'y' if ok else 'n'}  {f(o)} {f(e)} {f(c)} {e/o if ok and e else 0:5.2f} {c/o if ok and c else 0:5.2f} {r.get('eval_s',0):5} {r.get('judge_s') or 0:5.1f} {'' if ok else r.get('stage','')+': '+r.get('reason','')[:70]}")
PY

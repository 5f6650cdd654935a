#!/bin/bash
# H200, 2026-12-02, call 2: the per-call cost experiment with the evaluator's input pattern (three sets,
# rewritten by another process before each run), and evaluation cost with background imports.
START=$(date +%s); cd "$(dirname "$0")/.."; . .gpu/setup.sh
P=problems
echo "== split overhead v2 ($(left)s left)"
timeout 300 python3 tests/gpu/split_overhead.py $P/level1/17_rmsnorm.py $P/level1/31_reverse_cumsum.py > $OUT/split.txt 2>&1; echo "rc=$?"
grep -v "^\s*$" $OUT/split.txt | grep -v Warning | grep -v "^\[W" | tail -36
echo "== evalset ($(left)s left)"
timeout $(( $(left) - 15 )) python3 .gpu/evalset.py default $OUT/evalset.jsonl $P/level1/17_rmsnorm.py $P/level1/22_softmax_last_dim.py $P/level2/02_conv2d_batchnorm_relu.py > $OUT/evalset.txt 2>&1
python3 - $OUT/evalset.jsonl <<'PY'
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    print(r["problem"], r.get("correct"), "ours", r.get("runtime_ms"), "eager", r.get("eager_ms"), "eval", r.get("eval_s"), "judge", r.get("judge_s"))
    print("   ", {k: v for k, v in (r.get("seconds") or {}).items() if v >= 0.15})
PY
echo "done $(($(date +%s)-START))s"

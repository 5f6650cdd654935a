#!/bin/bash
# H200, 2026-12-02, call 1: where the evaluation's seconds go (stage_seconds, finer keys), and where the
# candidate's per-call cost under the split judge comes from (tests/gpu/split_overhead.py).
START=$(date +%s); cd "$(dirname "$0")/.."; . .gpu/setup.sh
echo "setup $(($(date +%s)-START))s"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,memory.used --format=csv,noheader
P=problems
echo "== split overhead ($(left)s left)"
timeout 250 python3 tests/gpu/split_overhead.py $P/level1/17_rmsnorm.py $P/level1/31_reverse_cumsum.py > $OUT/split.txt 2>&1; echo "rc=$?"
grep -v "^\s*$" $OUT/split.txt | grep -v Warning | tail -40
echo "== evalset x2 ($(left)s left)"
KS_REPEAT=2 timeout $(( $(left) - 15 )) python3 .gpu/evalset.py default $OUT/evalset.jsonl $P/level1/17_rmsnorm.py $P/level2/02_conv2d_batchnorm_relu.py $P/level1/01_matmul_square.py > $OUT/evalset.txt 2>&1
python3 - $OUT/evalset.jsonl <<'PY'
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    print(r["problem"], r.get("correct"), "ours", r.get("runtime_ms"), "eager", r.get("eager_ms"), "eval", r.get("eval_s"), "judge", r.get("judge_s"))
    print("   ", {k: v for k, v in (r.get("seconds") or {}).items() if v >= 0.2})
PY
echo "done $(($(date +%s)-START))s"

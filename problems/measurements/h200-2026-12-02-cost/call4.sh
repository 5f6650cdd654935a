#!/bin/bash
# H200, 2026-12-02, call 4: the candidate's own start-to-idle clock (timing.escapes_events) on the GPU:
# the split-judge tests (side-stream cheat rejected, honest candidates accepted), then six suite
# first candidates with their event and idle times side by side.
START=$(date +%s); cd "$(dirname "$0")/.."; . .gpu/setup.sh
P=problems
SET="$P/level1/17_rmsnorm.py $P/level1/22_softmax_last_dim.py $P/level1/05_matvec.py $P/level1/39_maxpool2d.py $P/level2/17_conv2d_gelu_global_avgpool.py $P/level3/01_mlp.py"
(timeout 80 python3 tests/gpu/prewarm_compile_cache.py --precision default 8 $SET > $OUT/prewarm.txt 2>&1) &
timeout 100 python3 -m pytest -q -s -p no:cacheprovider tests/gpu/test_judge_split.py -k "not level1" > $OUT/judge.txt 2>&1; echo "rc=$?"
grep -E "passed|failed|correct=|FAILED|Error|eager =" $OUT/judge.txt | cut -c1-220 | tail -14
wait
echo "== evalset ($(left 250)s left)"
timeout $(( $(left 250) - 5 )) python3 .gpu/evalset.py default $OUT/evalset.jsonl $SET > $OUT/evalset.txt 2>&1
python3 - $OUT/evalset.jsonl <<'PY'
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l); s = r.get("seconds") or {}
    print(f"{r['problem'][:36]:36} ok={r.get('correct')} ours {r.get('runtime_ms')} idle {r.get('idle_ms')} eager {r.get('eager_ms')} compile {r.get('compile_ms')} eval {r.get('eval_s')} {r.get('reason','')[:120]}")
PY
echo "done $(($(date +%s)-START))s"

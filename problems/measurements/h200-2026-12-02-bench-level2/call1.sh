#!/bin/bash
# Call 1 (H200, 2026-12-02), before the model arrives: where the judge's seconds go on the two
# slowest level-1 evaluations of h200-2026-12-02-comparison/ (maxpool2d 19.0 s, gelu's 4.6 s comparison; issue 22),
# now that the comparison copies its statistics once per leaf; and the elementwise per-call gap
# (eager vs raw kernel vs built-in candidate, one call at a time; issue 21).
KS_START=$(date +%s); cd "$(dirname "$0")/../../.." || exit 1; . tests/gpu/host_setup.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,memory.used --format=csv
run() { local f=$1; shift; timeout "$1" "${@:2}" > $OUT/$f 2>&1; echo "$f rc=$? $(($(date +%s)-KS_START))s"; }
run prof_maxpool.txt 100 python3 tests/gpu/judge_profile.py problems/level1/39_maxpool2d.py $OUT/maxpool.prof
run prof_gelu.txt 90 python3 tests/gpu/judge_profile.py problems/level1/11_gelu.py $OUT/gelu.prof
run protocol.txt $(( $(left 300) - 5 )) python3 -c "import sys; sys.path.insert(0, 'tests/gpu'); import torch, pointwise_configs as p; x = torch.randn(1 << 28, device='cuda'); p.protocol(x, torch.empty_like(x))"
head -25 $OUT/prof_maxpool.txt; head -25 $OUT/prof_gelu.txt; tail -20 $OUT/protocol.txt
echo "done $(($(date +%s)-KS_START))s"

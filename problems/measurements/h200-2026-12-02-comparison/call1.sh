#!/bin/bash
# Call 1 (H200, 2026-12-02): where the judge's comparison time goes (issue 22) and why the fused
# elementwise kernel trails eager (issue 21). Diagnostics only; each prints to its own file in $OUT.
KS_START=$(date +%s); cd "$(dirname "$0")/../../.." || exit 1; . tests/gpu/host_setup.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,memory.used --format=csv
run() { local f=$1; shift; timeout "$1" "${@:2}" > $OUT/$f 2>&1; echo "$f rc=$? $(($(date +%s)-KS_START))s"; }
run compare_cost.txt 90 python3 tests/gpu/compare_cost.py
run prof_gelu.txt 120 python3 tests/gpu/judge_profile.py problems/level1/11_gelu.py $OUT/gelu.prof
run prof_gelu_blocking.txt 120 env CUDA_LAUNCH_BLOCKING=1 python3 tests/gpu/judge_profile.py problems/level1/11_gelu.py $OUT/gelu_blocking.prof
run prof_matvec.txt 90 python3 tests/gpu/judge_profile.py problems/level1/05_matvec.py $OUT/matvec.prof
run pointwise.txt $(( $(left) - 15 )) python3 tests/gpu/pointwise_configs.py
cat $OUT/compare_cost.txt; head -3 $OUT/prof_gelu.txt; head -3 $OUT/prof_matvec.txt
grep -A14 "^copy:\|^silu:\|^gelu:" $OUT/pointwise.txt | cut -c1-90

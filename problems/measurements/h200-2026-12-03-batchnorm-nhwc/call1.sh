#!/bin/bash
# Call 1 (H200, 2026-12-03), before the model arrives: the built-in author's first candidates at full
# size (tests/gpu/first_candidates.py): correct vs float64, eager and candidate by the evaluator's
# protocol, the candidate's largest kernels. Usage: call1.sh PROBLEM...
KS_START=$(date +%s); cd "$(dirname "$0")/../../.." || exit 1; . tests/gpu/host_setup.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,memory.used --format=csv
for p in "$@"; do
    [ "$(left ${KS_LIMIT:-330})" -gt 25 ] || break
    timeout $(( $(left ${KS_LIMIT:-330}) - 5 )) python3 tests/gpu/first_candidates.py --out $OUT/cands $p \
        >> $OUT/first_candidates.txt 2>> $OUT/first_candidates.err
    echo "$p rc=$? $(($(date +%s)-KS_START))s"
done
cat $OUT/first_candidates.txt
echo "done $(($(date +%s)-KS_START))s"

#!/bin/bash
# Call 3 (H200, 2026-12-03, a fresh machine, wheels only): eval/baselines.py measured
# (tests/gpu/baseline_symmetry.py): kept references and first candidates with the baselines timed
# in their own process against the judge. Usage: call3.sh PROBLEM...
KS_START=$(date +%s); cd "$(dirname "$0")/../../.." || exit 1; . tests/gpu/host_setup.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.used --format=csv,noheader
timeout $(( $(left ${KS_LIMIT:-540}) - 10 )) python3 tests/gpu/baseline_symmetry.py "$@" 2> $OUT/symmetry.err \
    | grep -v "sandbox layers missing" | tee $OUT/symmetry.txt
echo "rc=$? done $(($(date +%s)-KS_START))s"; grep -v "UserWarning\|_warn_once" $OUT/symmetry.err | tail -5

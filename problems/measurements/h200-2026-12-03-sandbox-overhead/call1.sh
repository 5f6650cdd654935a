#!/bin/bash
# Call 1 (H200, 2026-12-03), before the model arrives: which layer of the judge's candidate process
# makes plain multi-kernel candidates slower (tests/gpu/sandbox_overhead.py on two problems), the
# built-in author's first candidates with their largest kernels (tests/gpu/first_candidates.py),
# then the GPU-marked tests the batch-norm and norm-absorb changes touch. Usage: call1.sh "OVERHEAD..." PROBLEM...
KS_START=$(date +%s); cd "$(dirname "$0")/../../.." || exit 1; . tests/gpu/host_setup.sh
export KS_LIMIT=${KS_LIMIT:-560}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,memory.used --format=csv
timeout 260 python3 tests/gpu/sandbox_overhead.py $1 > $OUT/sandbox_overhead.txt 2>&1
echo "sandbox_overhead rc=$? $(($(date +%s)-KS_START))s"; grep -v "^kernelskill: sandbox" $OUT/sandbox_overhead.txt
shift
for p in "$@"; do
    [ "$(left)" -gt 110 ] || break
    timeout $(( $(left) - 100 )) python3 tests/gpu/first_candidates.py --out $OUT/cands $p \
        >> $OUT/first_candidates.txt 2>> $OUT/first_candidates.err
    echo "$p rc=$? $(($(date +%s)-KS_START))s"
done
cat $OUT/first_candidates.txt
timeout $(( $(left) - 10 )) python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_poison_graph.py \
    tests/authors/test_conv_pool.py tests/authors/test_graph_replay.py tests/authors/test_capture_size.py \
    > $OUT/gpu_tests.txt 2>&1; echo "gpu tests rc=$?"; tail -5 $OUT/gpu_tests.txt
tar czf $OUT/cands.tgz -C $OUT cands 2>/dev/null; rm -rf $OUT/cands
echo "done $(($(date +%s)-KS_START))s"

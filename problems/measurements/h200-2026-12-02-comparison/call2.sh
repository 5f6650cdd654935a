#!/bin/bash
# Call 2 (H200, 2026-12-02; h200-2026-12-02-spare-judges/ ran it before): `kernelskill bench` under the default policy, built-in author, one
# round, spare judges (graph runs on a GPU keep one), resumable across calls and sessions: the bench
# folder stays on a warm machine and comes back as bench-default.tgz (extracted into bench-default/
# here, carried back on a cold machine). Usage: call2.sh PROBLEM...
KS_START=${KS_START:-$(date +%s)}; cd "$(dirname "$0")/../../.." || exit 1; . tests/gpu/host_setup.sh
M=problems/measurements/h200-2026-12-02-comparison; B=runs/bench-default
[ -d $M/bench-default ] || cp -r problems/measurements/h200-2026-12-02-spare-judges/bench-default $M/
if [ ! -d $B ] && [ -d $M/bench-default ]; then mkdir -p runs && cp -r $M/bench-default $B; fi
timeout 90 python3 tests/gpu/prewarm_compile_cache.py --precision default 14 "$@" > $OUT/prewarm.txt 2>&1
echo "prewarm $(($(date +%s)-KS_START))s: $(grep -c FAILED $OUT/prewarm.txt) failed"
RES=""; [ -f $B/results.jsonl ] && RES=--resume
timeout -s INT $(( $(left) - 25 )) python3 -m kernelskill.cli bench "$@" --precision default --rounds 1 \
    --out $B $RES > $OUT/bench.txt 2> $OUT/bench.err; echo "bench rc=$? $(($(date +%s)-KS_START))s"
grep -E "^\[|bench:" $OUT/bench.err | cut -c1-200 | tail -14
cat $OUT/bench.txt
tar czf $OUT/bench-default.tgz -C runs bench-default
echo "done $(($(date +%s)-KS_START))s"

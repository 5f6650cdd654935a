#!/bin/bash
# One device call of `kernelskill bench` (built-in author, KS_ROUNDS rounds, default 1), resumable
# across calls and sessions, on every GPU the machine has (one worker each: an nvidia-h200-x4 runs four problems
# at once, each on its own GPU and its own share of the cores).
#   KS_BENCH=bench-rerun KS_PRECISION=default KS_FROM=problems/measurements/h200-.../ \
#       tests/gpu/bench_call.sh PROBLEM...
# KS_BENCH names the bench folder (runs/$KS_BENCH on the machine); when the machine is cold and
# $KS_FROM/$KS_BENCH exists, the folder is copied from there first (its finished rows are kept).
# The folder comes back as $OUT/$KS_BENCH.tgz; extract it into the session's measurement folder.
KS_START=${KS_START:-$(date +%s)}; cd "$(dirname "$0")/../.." || exit 1; . tests/gpu/host_setup.sh
N=${KS_BENCH:?name the bench folder: KS_BENCH=...}; P=${KS_PRECISION:-default}; B=runs/$N
if [ ! -d "$B" ] && [ -n "$KS_FROM" ] && [ -d "$KS_FROM/$N" ]; then mkdir -p runs && cp -r "$KS_FROM/$N" "$B"; fi
GPUS=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
echo "$GPUS GPU(s), precision $P, bench folder $B"
timeout 90 python3 tests/gpu/prewarm_compile_cache.py --precision "$P" 14 "$@" > "$OUT/prewarm.txt" 2>&1
echo "prewarm $(($(date +%s)-KS_START))s: $(grep -c FAILED "$OUT/prewarm.txt") failed"
# The experience statistics travel with the folder: a later call, or session, goes on learning from
# what the earlier rows measured (a second pass over the same problems starts from the first's).
STATS=${XDG_CACHE_HOME:-$HOME/.cache}/kernelskill/skill_stats.json; mkdir -p "$(dirname "$STATS")"
[ -f "$B/skill_stats.json" ] && [ ! -f "$STATS" ] && cp "$B/skill_stats.json" "$STATS"
RES=""; [ -f "$B/results.jsonl" ] && RES=--resume
# SIGINT, not TERM: the bench's Ctrl-C path stops the workers and writes the summary of what finished.
timeout -s INT $(( $(left) - 25 )) python3 -m kernelskill.cli bench "$@" --precision "$P" --rounds "${KS_ROUNDS:-1}" \
    --out "$B" $RES > "$OUT/bench.txt" 2> "$OUT/bench.err"; echo "bench rc=$? $(($(date +%s)-KS_START))s"
grep -E "^\[|bench:" "$OUT/bench.err" | cut -c1-200 | tail -14
cat "$OUT/bench.txt"
[ -f "$STATS" ] && cp "$STATS" "$B/skill_stats.json"
tar czf "$OUT/$N.tgz" -C runs "$N"
echo "done $(($(date +%s)-KS_START))s"

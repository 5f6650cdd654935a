#!/bin/bash
# One device call comparing `kernelskill bench --ray` with the default pool on one GPU (issue D):
# the same problems through both, one after the other, then tests/gpu/ray_compare.py's table.
#   bash tests/gpu/ray_call.sh [PROBLEM...]      (default: three small level-1/2 problems)
# Needs, on a machine kept warm from earlier calls: set A (.gpu) and the model (.gpum) installed by
# host_setup.sh, and in this call `carry: [".ray"]`: ray's files unpacked from a wheel with its Java
# jar and the dashboard's source maps left out (31 MB as .ray/ray-site.tar.xz), plus msgpack's wheel.
# Built here (tests/gpu/README.md, "Ray on a bare host"); installed into $KS_SITE once per machine.
KS_START=${KS_START:-$(date +%s)}; cd "$(dirname "$0")/../.." || exit 1; . tests/gpu/host_setup.sh
if [ -d .ray ] && [ ! -f "$KS_SITE/.ray-done" ]; then
    tar xJf .ray/ray-site.tar.xz -C "$KS_SITE" \
        && python3 -m pip install -q --no-index --no-deps --no-compile --target "$KS_SITE" .ray/msgpack-*.whl \
        && touch "$KS_SITE/.ray-done"
fi
python3 -c "import ray; print('ray', ray.__version__)" || exit 1
[ $# -eq 0 ] && set -- problems/level1/11_gelu.py problems/level1/22_softmax_last_dim.py \
    problems/level2/01_linear_gelu_scale.py
timeout 90 python3 tests/gpu/prewarm_compile_cache.py --precision default 14 "$@" > "$OUT/prewarm.txt" 2>&1
echo "prewarm $(($(date +%s)-KS_START))s"
for mode in pool ray; do
    extra=(); [ $mode = ray ] && extra=(--ray)
    t0=$(date +%s); budget=$(( $(left) - 20 )); [ $mode = pool ] && budget=$(( $(left) / 2 - 10 ))
    timeout -s INT $budget python3 -m kernelskill.cli bench "$@" \
        --precision default --rounds 1 --out runs/cmp-$mode "${extra[@]}" > "$OUT/$mode.txt" 2> "$OUT/$mode.err"
    echo "$mode rc=$? $(( $(date +%s) - t0 ))s"
done
python3 tests/gpu/ray_compare.py runs/cmp-pool runs/cmp-ray | tee "$OUT/ray_compare.txt"
tar czf "$OUT/cmp.tgz" --exclude='*.sqlite' -C runs cmp-pool cmp-ray
echo "done $(($(date +%s)-KS_START))s"

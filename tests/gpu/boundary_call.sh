#!/usr/bin/env bash
# One device call for the judge's OS boundary (issue A), from the repo root on a bare GPU host:
#   bash tests/gpu/boundary_call.sh NEW OLD   (checkouts carried as ignored folders, e.g. .snap .old)
# 1. which buffer handovers cross which boundary, seccomp variants included (boundary_probe.py);
# 2. the GPU tests of the split judge and the boundary tests, on NEW (KS_SKIP_TESTS=1: not);
# 3. kept references and first candidates evaluated by OLD and NEW in turn (boundary_cost.py).
# Everything is also written to $OUT/boundary.log.
set -u
NEW=${1:-.snap}; OLD=${2:-.old}
export PYTHONUNBUFFERED=1
exec > >(tee "${OUT:-/tmp}/boundary.log") 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
[ -z "${KS_SKIP_PROBE:-}" ] && timeout 120 python3 tests/gpu/boundary_probe.py --non-dumpable | tail -9
for side in new old; do
    root=/tmp/ks-$side; mkdir -p $root
    ln -sfn "$PWD/$([ $side = new ] && echo "$NEW" || echo "$OLD")" $root/kernelskill
done
if [ -z "${KS_SKIP_TESTS:-}" ]; then
    (cd "$NEW" && PYTHONPATH=/tmp/ks-new timeout 240 python3 -m pytest -q -s tests/gpu/test_judge_split.py \
        -p no:cacheprovider -k "not level1" 2>&1 | grep -v "^$" | tail -40)
    (cd "$NEW" && PYTHONPATH=/tmp/ks-new timeout 60 python3 -m pytest -q tests/eval/test_boundary.py \
        -p no:cacheprovider 2>&1 | tail -4)
fi
pairs=()
for stem in ${KS_PROBLEMS:-level1/11_gelu level1/22_softmax_last_dim level2/01_linear_gelu_scale}; do
    name=${stem/\//__}
    pairs+=("problems/$stem.py:.cmp/$name.kept.py" "problems/$stem.py:.cmp/$name.first.py")
done
timeout ${KS_COST_LIMIT:-330} python3 tests/gpu/boundary_cost.py /tmp/ks-old /tmp/ks-new "${pairs[@]}"

#!/usr/bin/env bash
# One device call for the evaluator's adversarial tests against the GPU judge, from the repo root
# on a bare GPU host (carry .gpu on a fresh machine: host_setup.sh installs it):
#   bash tests/gpu/attacks_call.sh [TEST_FILE...]   (default: the five attack files below)
# They run with KS_ATTACK_DEVICE=cuda (tests/eval/attack_device.py): judge memory and boundary,
# files and code the checks never saw, isolation and caches, timing and accounting, correctness.
# Tests whose assertion holds on the CPU only are skipped with their reason (-rs). KS_ATTACK_LIMIT:
# pytest's limit in seconds (300); name fewer files to split the run over calls. The whole output
# is written to $OUT/attacks.log, its tail printed.
set -u
. tests/gpu/host_setup.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
files=("$@")
[ ${#files[@]} -eq 0 ] && files=(tests/eval/test_adversarial.py tests/eval/test_timing_holes.py
    tests/eval/test_correctness_holes.py tests/eval/test_code_holes_runtime.py tests/eval/test_boundary.py)
log=${OUT:-/tmp}/attacks.log
KS_ATTACK_DEVICE=cuda timeout "${KS_ATTACK_LIMIT:-300}" python3 -m pytest -q -p no:cacheprovider -rs \
    "${files[@]}" > "$log" 2>&1
echo "pytest exit code $? after $(( $(date +%s) - KS_START )) s (124: past the limit)"
tail -n 60 "$log"

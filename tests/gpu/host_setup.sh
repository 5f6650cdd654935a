# Source from the repo root on a bare GPU host (tests/gpu/README.md, "A bare GPU host"):
#   . tests/gpu/host_setup.sh
# Installs the wheel set carried in .gpu/ and restores the embedding model carried in .gpum/ (when
# present) into $KS_SITE (default ~/.ks-site): outside the repo, which each call's copy of the tree
# replaces, so it stays while the machine is warm and a second call finds both done.
# Defines `kernelskill` (no console script without an install), `left [LIMIT]` (seconds left of a
# call started at KS_START, default limit 570) and the shared compile caches evaluations use.
KS_START=${KS_START:-$(date +%s)}
left() { echo $(( ${1:-${KS_LIMIT:-570}} - ($(date +%s) - KS_START) )); }
KS_SITE=${KS_SITE:-$HOME/.ks-site}; mkdir -p "$KS_SITE"
if [ -d .gpu ] && [ ! -f $KS_SITE/.wheels-done ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$KS_SITE" .gpu/*.whl \
        && touch $KS_SITE/.wheels-done
fi
ln -sfn "$PWD" "$KS_SITE/kernelskill"
if [ -d .gpum ] && [ ! -f $KS_SITE/.model-done ]; then
    python3 tests/gpu/carry_model.py unpack .gpum "$KS_SITE" && touch $KS_SITE/.model-done
fi
export PYTHONPATH=$KS_SITE PYTHONUNBUFFERED=1
export TRITON_CACHE_DIR=$HOME/.cache/kernelskill-compile/triton
export TORCHINDUCTOR_CACHE_DIR=$HOME/.cache/kernelskill-compile/inductor
kernelskill() { python3 -m kernelskill.cli "$@"; }
echo "host setup: $(( $(date +%s) - KS_START )) s, $(ls "$KS_SITE" | wc -l) entries in $KS_SITE"

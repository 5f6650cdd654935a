#!/bin/bash
# Call 1 (H200, 2026-12-03), before the model arrives: each level-2 convolution problem's
# convolutions alone (NCHW / channels-last, TF32 off / on) and its input's conversion to
# channels-last, aten's against the runtime's tiled transpose (runtime/conv_layout.py,
# `_cv_channels_last`, new this session); whole forward eager and torch.compile.
KS_START=$(date +%s); cd "$(dirname "$0")/../../.." || exit 1; . tests/gpu/host_setup.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,memory.used --format=csv
for p in 02_conv2d_batchnorm_relu 17_conv2d_gelu_global_avgpool 21_conv2d_pixelshuffle_prelu \
         11_conv2d_hardswish_residual 24_conv2d_strided_batchnorm_mish 18_conv3d_instancenorm_leakyrelu; do
    [ "$(left 240)" -gt 20 ] || break
    timeout $(( $(left 240) - 5 )) python3 tests/gpu/conv_layouts.py problems/level2/$p.py >> $OUT/conv_layouts.txt 2>&1
    echo "$p rc=$? $(($(date +%s)-KS_START))s"
done
grep -v Warning $OUT/conv_layouts.txt | tail -40
echo "done $(($(date +%s)-KS_START))s"

"""A kernel's structure from its name (nodes/classify.py): the planner's target kernel is judged by
it, so a Triton kernel of the author's own (or an LLM's) must not take the forward's main
structure when its name says what it is."""

from __future__ import annotations

import pytest
from kernelskill.nodes.classify import kernel_structure

CNN = ["conv", "normalization", "column-reduction", "elementwise", "multi-kernel-graph"]


@pytest.mark.parametrize(("name", "structure"), [
    ("_nrm_stats_kernel", "normalization"),          # the runtime's batch-norm statistics
    ("_nrm_apply_cl_kernel_13", "normalization"),
    ("_cv_transpose_kernel", "elementwise"),         # a layout change, not a convolution
    ("_pointwise_kernel_0", "elementwise"),
    ("_attn_fwd_kernel", "attention"),
    ("triton_per_fused_native_layer_norm_0", "normalization"),
    ("sm90_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nhwc", "conv"),
    ("void cudnn::bn_fw_tr_1C11_kernel_NCHW<float>", "normalization"),
    ("void cudnn::engines_precompiled::nchwToNhwcKernel", "elementwise"),
    ("triton_poi_fused_convolution_relu_0", "conv"),
])
def test_names_say_the_structure(name: str, structure: str) -> None:
    assert kernel_structure(name, CNN) == structure


def test_an_unrecognised_name_takes_the_forward_s_main_structure() -> None:
    assert kernel_structure("_fused_k0", CNN) == "conv"
    assert kernel_structure("normal_kernel", ["gemm"]) == "gemm"  # "normal" is not a norm

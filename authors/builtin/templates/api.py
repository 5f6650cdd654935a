"""The one public import path of skill templates: `from kernelskill.authors.builtin.templates.api
import ...`.

skills/<id>/template.py files import only from here, so the built-in author's internal layout
(frontend/, families/<family>/, runtime/) can change without editing skills. It re-exports the
template interface (templates/base.py), the IR (frontend/ir.py), each family's template classes
and codegen helpers, and the shared runtime sources a template emits. It sits above the families
(it imports them); nothing inside authors/builtin imports it.
"""

from ..families.attention.template import AttentionTemplate
from ..families.conv_pool.common import (
    CHEAP_OPS,
    PIXEL_COORDS,
    WINDOW_CONSTS,
    PlaneChain,
    chain_ok,
    conv_attr_args,
    conv_bias_expr,
    conv_ok,
    hashable_attr,
    indent,
    is_float,
    module_expr,
    one_channel_groups,
    single_output,
    tail_runs,
    tup,
    window_tile_lines,
)
from ..families.conv_pool.conv_launch import ConvLaunch
from ..families.conv_pool.gemm import POINTWISE_CONFIGS, ConvGemmTemplate
from ..families.conv_pool.layout import (
    CONFIGS,
    SharedInputs,
    channels_last_rule,
    emit_layout_conv,
    nhwc_readers,
    shared_conv_inputs,
)
from ..families.conv_pool.plane_launch import DirectConvLaunch, PlaneLaunch
from ..families.gemm.kernels import KernelOpts
from ..families.gemm.match import DEFAULT_CONFIGS, PREP16_CONFIGS, PREP_CONFIGS, gemm_ok, tile_config
from ..families.gemm.rewrites import (
    rewrite_diagonal,
    rewrite_reassociation,
    rewrite_symmetric,
    rewrite_triangular,
)
from ..families.gemm.template import GemmTemplate
from ..families.norms.absorb import absorb_conv_biases
from ..families.norms.emit import emit_norm
from ..families.norms.match import chains_supported, parse_norm
from ..families.norms.rewrite import rewrite_manual_norms
from ..families.pointwise.template import FusedElementwise
from ..families.reductions.reducers import ELEMENTWISE_LOSSES
from ..families.reductions.templates import (
    IndexReductionTemplate,
    LossTemplate,
    ReductionTemplate,
    SoftmaxTemplate,
    VariantTemplate,
    trailing,
    whole_tensor,
)
from ..families.scan.codegen import COMBINES, emit_scan
from ..families.scan.match import scan_dim, scan_region_ok
from ..frontend.ir import Op, Program, Region, Value
from ..runtime import (
    COLLAPSE,
    CONV_TAIL,
    CP_PLANS,
    CP_RUNTIME,
    GRAPH_FORWARD,
    GRAPH_REPLAY,
    POOL_GLOBAL,
    POOL_WINDOW,
)
from .base import EmitContext, Emitted, Template
from .launch import autotune

__all__ = [
    "AttentionTemplate",
    "CHEAP_OPS",
    "COLLAPSE",
    "COMBINES",
    "CONFIGS",
    "CONV_TAIL",
    "CP_PLANS",
    "CP_RUNTIME",
    "ConvGemmTemplate",
    "ConvLaunch",
    "DirectConvLaunch",
    "DEFAULT_CONFIGS",
    "ELEMENTWISE_LOSSES",
    "EmitContext",
    "Emitted",
    "FusedElementwise",
    "GRAPH_FORWARD",
    "GRAPH_REPLAY",
    "GemmTemplate",
    "IndexReductionTemplate",
    "KernelOpts",
    "LossTemplate",
    "Op",
    "PIXEL_COORDS",
    "POOL_GLOBAL",
    "POOL_WINDOW",
    "POINTWISE_CONFIGS",
    "PREP16_CONFIGS",
    "PREP_CONFIGS",
    "PlaneChain",
    "PlaneLaunch",
    "Program",
    "ReductionTemplate",
    "Region",
    "SharedInputs",
    "SoftmaxTemplate",
    "Template",
    "Value",
    "VariantTemplate",
    "WINDOW_CONSTS",
    "absorb_conv_biases",
    "autotune",
    "chain_ok",
    "chains_supported",
    "channels_last_rule",
    "conv_attr_args",
    "conv_bias_expr",
    "conv_ok",
    "emit_layout_conv",
    "emit_norm",
    "emit_scan",
    "gemm_ok",
    "hashable_attr",
    "indent",
    "is_float",
    "module_expr",
    "nhwc_readers",
    "one_channel_groups",
    "parse_norm",
    "rewrite_diagonal",
    "rewrite_manual_norms",
    "rewrite_reassociation",
    "rewrite_symmetric",
    "rewrite_triangular",
    "scan_dim",
    "scan_region_ok",
    "shared_conv_inputs",
    "single_output",
    "tail_runs",
    "tile_config",
    "trailing",
    "tup",
    "whole_tensor",
    "window_tile_lines",
]

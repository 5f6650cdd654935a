"""A convolution's bias absorbed by the norm after it (the two-level-norm-statistics rewrite).

The convolution runs without its bias, so its output skips the pass that adds it (H200 profiles of
2026-12-03, problems/measurements/h200-2026-12-03-batchnorm-nhwc/: 92-491 us a forward, as much as a
norm's statistics, on level2/05, 09 and 22), and the norm accounts for it. A batch norm in training and
an instance norm subtract each channel's mean over the values they normalize; a per-channel bias shifts
that mean by itself and leaves the variance alone, so the normalized result is the same without it. A
batch norm that tracks running statistics takes the bias as an operand (`xbias`) and adds it to the
running mean it updates, as the module would have recorded it. A group norm averages several channels
with different biases, which do not cancel: it takes the bias as an operand too and adds it to each
value it loads (in the pass that reads the values anyway when they arrive channels-last).

Both ops keep a PyTorch fallback that computes the same thing, so the rewrite holds whichever
template (or none) later emits either region.
"""

from __future__ import annotations

import copy

from ...frontend.ir import Op, Program, leaves
from ..conv_pool.common import module_expr
from .match import parse_norm


def _absorber(conv: Op, users: dict[str, list[Op]], returned: set[str]) -> tuple[Op, bool] | None:
    """The norm that may absorb `conv`'s bias, and whether it takes the bias as an operand (its
    running mean or its values depend on it): the one op reading the module convolution's
    output, as its main input only, a batch norm in training, an instance norm or a group norm
    we generate (a module call where the norm takes the bias: its fallback)."""
    if conv.kind not in ("conv", "conv_transpose") or module_expr(conv) is None:
        return None
    if conv.attrs.get("bias") is not True or len(conv.inputs) < 3 or not conv.inputs[2].is_tensor:
        return None
    name = conv.out.name
    readers = users.get(name, [])
    if name in returned or len(readers) != 1:
        return None
    norm = readers[0]
    if norm.inputs[0].name != name or any(v.name == name for v in norm.inputs[1:]):
        return None
    spec = parse_norm(norm)
    if spec is None or norm.kind not in ("batch_norm", "instance_norm", "group_norm"):
        return None
    if norm.kind == "batch_norm" and not spec.training:
        return None
    takes = norm.kind == "group_norm" or spec.running_mean is not None
    if takes and module_expr(norm) is None:
        return None
    return norm, takes


def _without_bias(conv: Op) -> None:
    """`conv` computing its output without the bias; the fallback as the functional call."""
    mod, dims = module_expr(conv), conv.attrs["dims"]
    x = conv.inputs[0].name
    if conv.kind == "conv":
        tail = f"{mod}.stride, {mod}.padding, {mod}.dilation, {mod}.groups"
        fn = f"conv{dims}d"
    else:
        tail = f"{mod}.stride, {mod}.padding, {mod}.output_padding, {mod}.groups, {mod}.dilation"
        fn = f"conv_transpose{dims}d"
    conv.inputs = conv.inputs[:2]
    conv.attrs.update(bias=False, module=mod)  # the module's attributes stay read at run time
    conv.torch_expr = f"torch.nn.functional.{fn}({x}, {mod}.weight, None, {tail})"


def absorb_conv_biases(program: Program) -> Program | None:
    """`program` with every absorbable convolution bias moved into its norm (a copy), or None
    when there is none."""
    users = program.users()
    returned = {v.name for v in leaves(program.outputs)}
    pairs = [(i, program.ops.index(hit[0]), hit[1]) for i, op in enumerate(program.ops)
             if (hit := _absorber(op, users, returned)) is not None]
    if not pairs:
        return None
    program = copy.deepcopy(program)
    for i, j, takes in pairs:
        conv, norm = program.ops[i], program.ops[j]
        bias = conv.inputs[2]
        _without_bias(conv)
        if takes:
            ones = ", 1" * (norm.inputs[0].meta.rank - 2)
            norm.inputs.append(bias)
            norm.attrs["xbias"] = bias.name
            norm.torch_expr = f"{module_expr(norm)}({norm.inputs[0].name} + {bias.name}.reshape(-1{ones}))"
    return program

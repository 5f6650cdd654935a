"""What a normalization op must be for the norm templates: `parse_norm` reads an op's operands and
attributes into a `NormSpec` (None when the op is a variant we do not generate), and
`chains_supported` checks the fused prologue / epilogue operands."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ...frontend.ir import Op, Region, Value
from . import kernels as S

_FLOATS = (torch.float32, torch.float16, torch.bfloat16)
@dataclass
class NormSpec:
    kind: str
    x: Value
    weight: Value | None = None
    bias: Value | None = None
    running_mean: Value | None = None
    running_var: Value | None = None
    nbt: str | None = None
    """Generated-code expression of BatchNorm's num_batches_tracked buffer."""
    xbias: Value | None = None
    """The bias of the convolution before a batch or group norm, absorbed by it (absorb.py): x
    lacks it; a batch norm's running mean gets it, a group norm's values do."""
    mode: int = S.LAYER
    eps: float = 1e-5
    reduce_last: int = 0
    """layer_norm / rms_norm: the number of trailing dims normalized."""
    dim: int | None = None
    """normalize: the reduced dim."""
    groups: int = 1
    training: bool = True
    momentum: float | None = 0.1


def _operands(op: Op) -> dict[str, Value] | None:
    """weight / bias / running stats among op.inputs[1:], by the names lower.py gives them."""
    found: dict[str, Value] = {}
    rest = [v for v in op.inputs[1:] if v.is_tensor]
    xbias = op.attrs.get("xbias")
    if xbias is not None:  # named by the rewrite that moved it here; a ".bias" of another module
        hit = [v for v in rest if v.name == xbias]
        if len(hit) != 1 or op.kind not in ("batch_norm", "group_norm"):
            return None
        found["xbias"] = hit[0]
        rest.remove(hit[0])
    for key in ("weight", "bias"):
        ref = op.attrs.get(key)
        if isinstance(ref, str):
            hit = [v for v in rest if v.name == ref]
            if not hit:
                return None
            found[key] = hit[0]
    for v in rest:
        if v in found.values():
            continue
        key = next((k for k in ("weight", "bias", "running_mean", "running_var")
                    if v.name.endswith("." + k) and k not in found), None)
        if key is None:
            return None  # an operand we cannot place
        found[key] = v
    return found


def _float(v: object) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def parse_norm(op: Op) -> NormSpec | None:
    """The op as a NormSpec, or None for shapes, dtypes and variants we leave to PyTorch."""
    if not op.inputs or not op.inputs[0].is_tensor or op.out.meta is None:
        return None
    x = op.inputs[0]
    meta = x.meta
    if meta.dtype not in _FLOATS or op.out.meta.dtype != meta.dtype or op.out.meta.shape != meta.shape:
        return None
    ops = _operands(op)
    if ops is None:
        return None
    spec = NormSpec(kind=op.kind, x=x, weight=ops.get("weight"), bias=ops.get("bias"),
                    running_mean=ops.get("running_mean"), running_var=ops.get("running_var"),
                    xbias=ops.get("xbias"))
    a = op.attrs
    eps = a.get("eps")
    if op.kind == "rms_norm" and a.get("dim") is not None:
        # norms_rewrite's RMS norm over one (not the last) dim
        if not isinstance(a["dim"], int) or not 0 <= a["dim"] < meta.rank or spec.weight is not None:
            return None
        spec.dim, spec.mode = a["dim"], S.RMS
        eps = torch.finfo(meta.dtype).eps if eps is None else eps
        if spec.running_mean is not None or spec.running_var is not None:
            return None
    elif op.kind in ("layer_norm", "rms_norm"):
        shape = a.get("normalized_shape")
        shape = (shape,) if isinstance(shape, int) else shape
        if not isinstance(shape, (tuple, list)) or not shape or not all(isinstance(s, int) for s in shape):
            return None
        k = len(shape)
        if k > meta.rank or tuple(meta.shape[-k:]) != tuple(shape):
            return None
        spec.reduce_last, spec.mode = k, S.LAYER if op.kind == "layer_norm" else S.RMS
        if eps is None and op.kind == "rms_norm":
            eps = torch.finfo(meta.dtype).eps
        if spec.running_mean is not None or spec.running_var is not None:
            return None
        n = 1
        for s in shape:
            n *= s
        if any(p is not None and p.meta.numel != n for p in (spec.weight, spec.bias)):
            return None
    elif op.kind == "normalize":
        p, dim = _float(a.get("p")), a.get("dim")
        if p not in (1.0, 2.0) or not isinstance(dim, int) or not -meta.rank <= dim < max(meta.rank, 1):
            return None
        if spec.weight is not None or spec.bias is not None or meta.rank == 0 or a.get("out") is not None:
            return None
        spec.mode, spec.dim = (S.L2 if p == 2.0 else S.L1), dim % meta.rank
    elif op.kind in ("group_norm", "instance_norm", "batch_norm"):
        if meta.rank < (3 if op.kind == "instance_norm" else 2):
            return None
        c = meta.shape[1]
        if any(p is not None and p.meta.numel != c for p in (spec.weight, spec.bias, spec.running_mean,
                                                             spec.running_var)):
            return None
        if op.kind == "group_norm":
            g = a.get("num_groups")
            if not isinstance(g, int) or g <= 0 or c % g:
                return None
            spec.groups = g
            if spec.xbias is not None and spec.xbias.meta.numel != c:
                return None
        elif op.kind == "batch_norm":
            spec.training = bool(a.get("training", True))
            mom = a.get("momentum", 0.1)
            if mom is not None and _float(mom) is None:
                return None
            spec.momentum = None if mom is None else float(mom)
            has_rm, has_rv = spec.running_mean is not None, spec.running_var is not None
            if has_rm != has_rv or (not spec.training and not has_rm):
                return None
            if has_rm and spec.training:
                if not spec.running_mean.name.endswith(".running_mean"):
                    return None
                spec.nbt = spec.running_mean.name[: -len("running_mean")] + "num_batches_tracked"
            if spec.xbias is not None and not (has_rm and spec.training and spec.xbias.meta.numel == c):
                return None
        elif spec.running_mean is not None:
            return None
    else:
        return None
    if _float(eps) is None:
        return None
    spec.eps = float(eps)
    return spec


def chains_supported(region: Region) -> bool:
    """Fused chains whose operands ChainCode can load (tensors of a floating or bool dtype)."""
    for ops in (region.prologue, region.epilogue):
        for op in ops:
            for v in op.inputs:
                if v.is_tensor and not (v.meta.dtype.is_floating_point or v.meta.dtype == torch.bool):
                    return False
    return True

"""Convolution experiment: where do the level-2 convolution problems' times go under TF32?

For each problem given, every nn.Conv* / nn.ConvTranspose* module of the reference is run alone on
the input it sees in a real forward, in NCHW (as the reference and our vendor-conv path call it)
and channels-last (input and weight converted outside the timing, as a graph that stays
channels-last would see them), with TF32 on and off; then the whole forward eager and
torch.compile with TF32 on. Prints one line per convolution and per problem.

Per convolution it also times the input's conversion to channels-last two ways: aten's
`contiguous(memory_format=)`, which runtime/conv_layout.py called on every forward until 2026-12-03
(problems/measurements/h200-2026-12-02-bench-level2/'s profiles: 213-673 us, 0.4-1.3 TB/s), and the
autotuned tiled Triton transpose it calls now (`_cv_relayout`;
problems/measurements/h200-2026-12-03-conv-transpose/: 3.6-4.0 TB/s against aten's 1.25-1.75). The first
question (problems/measurements/h200-2026-11-30-tf32/): does torch.compile's lead come from running
convolutions channels-last? Needs torch, triton and the repo on PYTHONPATH.

    python3 tests/gpu/conv_layouts.py problems/level2/02_conv2d_batchnorm_relu.py ...
"""
# ruff: noqa: B023  (each timing lambda runs inside its own loop iteration)
import copy
import sys
from pathlib import Path

import torch
import triton
from kernelskill.authors.builtin.runtime.conv_layout import _cv_relayout
from kernelskill.eval.problem import load_problem

CONVS = (torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d, torch.nn.ConvTranspose1d,
         torch.nn.ConvTranspose2d, torch.nn.ConvTranspose3d)


def bench(fn) -> float:
    return triton.testing.do_bench(fn, warmup=10, rep=60, return_mode="median")


def channels_last(t: torch.Tensor) -> torch.Tensor:
    fmt = {4: torch.channels_last, 5: torch.channels_last_3d}.get(t.dim())
    return t if fmt is None else t.contiguous(memory_format=fmt)


def conversion_row(x: torch.Tensor) -> str:
    gb = 2 * x.numel() * x.element_size() / 1e9
    fmt = torch.channels_last if x.dim() == 4 else torch.channels_last_3d
    aten = bench(lambda: channels_last(x))
    plans: dict = {}
    ours = bench(lambda: _cv_relayout(x, fmt, plans))
    assert torch.equal(_cv_relayout(x, fmt, plans), channels_last(x))
    pick = [v for k, v in plans.items() if k[0] == "transpose"]
    return (f"    input to channels-last: aten {aten:.3f} ms ({gb / aten:.2f} TB/s), tiled Triton "
            f"{ours:.3f} ms ({gb / ours:.2f} TB/s, pick {pick})")


def tf32(on: bool) -> None:
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = on


def conv_rows(model: torch.nn.Module, inputs: list) -> list[str]:
    seen: list[tuple[torch.nn.Module, torch.Tensor]] = []
    hooks = [m.register_forward_hook(lambda m, i, o: seen.append((m, i[0].detach())))
             for m in model.modules() if isinstance(m, CONVS)]
    with torch.no_grad():
        model(*inputs)
    for h in hooks:
        h.remove()
    rows = []
    for m, x in seen:
        cl_m = copy.deepcopy(m)
        if x.dim() in (4, 5):
            cl_m = cl_m.to(memory_format=torch.channels_last if x.dim() == 4 else torch.channels_last_3d)
        xc = channels_last(x)
        times = []
        for on in (False, True):
            tf32(on)
            with torch.no_grad():
                times += [bench(lambda: m(x)), bench(lambda: cl_m(xc))]
        rows.append(f"  {type(m).__name__}{tuple(x.shape)} k{m.kernel_size} s{m.stride}: strict NCHW "
                    f"{times[0]:.3f} / NHWC {times[1]:.3f} ms; "
                    f"TF32 NCHW {times[2]:.3f} / NHWC {times[3]:.3f} ms")
        if x.dim() in (4, 5) and x.is_contiguous():
            rows.append(conversion_row(x))
    return rows


if __name__ == "__main__":
    for path in sys.argv[1:]:
        prob = load_problem(Path(path).read_text(), "full", path)
        torch.manual_seed(0)
        model = prob.model_cls(*prob.module.get_init_inputs()).cuda()
        inputs = [t.cuda() if isinstance(t, torch.Tensor) else t for t in prob.get_inputs()]
        rows = conv_rows(model, inputs)
        tf32(True)
        with torch.no_grad():
            eager = bench(lambda: model(*inputs))
            compiled = torch.compile(model)
            compiled(*inputs)
            comp = bench(lambda: compiled(*inputs))
        print(f"{Path(path).stem}: TF32 forward eager {eager:.3f} ms, torch.compile {comp:.3f} ms",
              flush=True)
        print("\n".join(rows), flush=True)

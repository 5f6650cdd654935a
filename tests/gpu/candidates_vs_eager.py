"""Candidate files against eager at full size, on one GPU: correctness (the evaluator's compare,
against float64) and time, either `triton.testing.do_bench` (back-to-back launches: kernel time)
or the evaluator's protocol (`--protocol`: L2 flushed and synchronized before every run, so host
launch time counts). The gap between the two is a candidate's exposed host cost.

A manifest is a JSON list of {"problem": path, "variant": name, "path": candidate file}; problems
are dealt round-robin to WORKERS processes (one per GPU: CUDA_VISIBLE_DEVICES=i ... i N).

    python3 tests/gpu/candidates_vs_eager.py MANIFEST WORKER WORKERS [--protocol | --both] [VARIANT...]

`--both` times each candidate both ways and prints "do_bench / protocol".

Outputs of the H200 runs in problems/measurements/h200-2026-11-30-conv16/.
"""
# ruff: noqa: B023  (each timing lambda runs inside its own loop iteration)
import copy
import gc
import importlib.util
import json
import sys
import time

import torch
import triton
from kernelskill.eval.judge.compare import compare
from kernelskill.eval.problem import load_problem
from kernelskill.eval.timing.protocol import Timer


def load(path: str):  # noqa: ANN201
    spec = importlib.util.spec_from_file_location(path.split("/")[-1][:-3].replace(".", "_"), path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def tuned(mod) -> str:  # noqa: ANN001
    """The autotuned kernels' chosen configurations: block sizes, warps, stages."""
    picks = []
    for name, o in vars(mod).items():
        cfg = getattr(o, "best_config", None) if isinstance(o, triton.runtime.autotuner.Autotuner) else None
        if cfg is not None:
            blocks = "x".join(str(v) for v in cfg.kwargs.values())
            picks.append(f"{name.strip('_')}:{blocks}/{cfg.num_warps}w{cfg.num_stages}s")
    return " ".join(picks)


def cuda(xs: list) -> list:
    return [x.cuda() if isinstance(x, torch.Tensor) else x for x in xs]


def main() -> None:
    args = [a for a in sys.argv[1:] if a not in ("--protocol", "--both")]
    both = "--both" in sys.argv
    protocol = "--protocol" in sys.argv or both
    manifest, wid, nw, variants = args[0], int(args[1]), int(args[2]), args[3:]
    with open(manifest) as fh:
        man = [m for m in json.load(fh) if not variants or m["variant"] in variants]
    timer = Timer("cuda") if protocol else None
    for f in sorted({m["problem"] for m in man})[wid::nw]:
        t0 = time.time()
        with open(f) as fh:
            prob = load_problem(fh.read(), "full", f)
        torch.manual_seed(0)
        init = prob.get_init_inputs()
        torch.manual_seed(0)
        ref = prob.model_cls(*init).cuda()
        sets = []
        for s in range(3):
            torch.manual_seed(1 + s)
            sets.append(cuda(prob.get_inputs()))
        x = sets[0]
        with torch.no_grad():
            x64 = [t.double() if isinstance(t, torch.Tensor) and t.is_floating_point() else t for t in x]
            o64 = copy.deepcopy(ref).double()(*x64)
            tf32 = torch.backends.cudnn.allow_tf32
            torch.backends.cudnn.allow_tf32 = False
            o32 = copy.deepcopy(ref)(*x)
            torch.backends.cudnn.allow_tf32 = tf32

        def kernel_ms(fn) -> float:
            with torch.no_grad():
                return triton.testing.do_bench(lambda: fn(*x), warmup=25, rep=100, return_mode="median")

        def bench(fn) -> float:
            return timer.time(fn, sets).median_ms if timer is not None else kernel_ms(fn)

        def label(fn, t: float) -> str:
            return f"{kernel_ms(fn):.3f} / {t:.3f}" if both else f"{t:.3f}"

        te = bench(ref)
        cells = [f"eager {label(ref, te)}"]
        for m in man:
            if m["problem"] != f:
                continue
            try:
                mod = load(m["path"])
                torch.manual_seed(0)
                new = mod.ModelNew(*init).cuda()
                with torch.no_grad():
                    v = compare(new(*x), o64, o32)
                t = bench(new)
                verdict = "ok" if v.ok else f"WRONG: {str(v.reason)[:80]}"
                cells.append(f"{m['variant']} {label(new, t)} ({te / t:.2f}x, {verdict}, "
                             f"err {v.max_abs_err:.1e} vs torch {v.torch_err:.1e}) {tuned(mod)}")
            except Exception as e:  # noqa: BLE001
                cells.append(f"{m['variant']} FAILED {type(e).__name__}: {str(e)[:150]}")
            # Free this variant's model, and with it any captured CUDA graphs and their memory pools,
            # before the next one is timed (a plain candidate once ran 1.8x slower after other
            # problems' graph variants in the same process: rowscale measurements, not explained).
            mod = new = None
            gc.collect()
            torch.cuda.empty_cache()
        name = f.split("/", 1)[1][:-3]
        print(f"{name:48s} " + "; ".join(cells) + f" [{time.time() - t0:.0f}s]", flush=True)


if __name__ == "__main__":
    main()

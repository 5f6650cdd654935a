"""Fill torch.compile's on-disk caches for problems in parallel (CPU-bound compiles overlap), so
the benchmark's torch.compile baselines cost seconds. Timing is not done here.

    python3 prewarm.py [--tf32] WORKERS PROBLEM...

--tf32 compiles with TF32 matmuls and convolutions on, as `kernelskill bench --allow-tf32` times
its baselines (the flags are part of what torch.compile caches).
"""
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path


def warm(path: str, tf32: bool = False) -> str:
    import torch
    from kernelskill.eval.harness import make_inputs
    from kernelskill.eval.problem import load_problem

    t0 = time.time()
    try:
        p = load_problem(Path(path).read_text(), "full", path)
        if tf32:  # else PyTorch's defaults, as the strict bench times its baselines
            torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
        torch.manual_seed(0)
        model = p.model_cls(*p.get_init_inputs()).cuda()
        inputs = make_inputs(p, 500, "cuda")
        with torch.no_grad():
            torch.compile(model)(*inputs)
        torch.cuda.synchronize()
        return f"{path}: {time.time() - t0:.1f}s"
    except Exception as e:  # a baseline that fails to compile fails later too; report and go on
        return f"{path}: FAILED {type(e).__name__}: {str(e)[:120]}"


if __name__ == "__main__":
    import multiprocessing as mp

    mp.set_start_method("spawn")
    args = sys.argv[1:]
    tf32 = args[:1] == ["--tf32"]
    args = args[1:] if tf32 else args
    with ProcessPoolExecutor(int(args[0])) as pool:
        for line in pool.map(warm, args[1:], [tf32] * len(args[1:])):
            print(line, flush=True)

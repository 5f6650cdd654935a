"""Fill torch.compile's on-disk caches for problems in parallel (CPU-bound compiles overlap), so
the benchmark's torch.compile baselines cost seconds. Timing is not done here.

    python3 prewarm.py WORKERS PROBLEM...
"""
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path


def warm(path: str) -> str:
    import torch
    from kernelskill.eval.harness import make_inputs
    from kernelskill.eval.problem import load_problem

    t0 = time.time()
    try:
        p = load_problem(Path(path).read_text(), "full", path)
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
    with ProcessPoolExecutor(int(sys.argv[1])) as pool:
        for line in pool.map(warm, sys.argv[2:]):
            print(line, flush=True)

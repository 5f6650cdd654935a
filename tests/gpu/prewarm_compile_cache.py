"""Fill torch.compile's on-disk caches for problems in parallel (CPU-bound compiles overlap), so
the benchmark's torch.compile baselines cost seconds. Timing is not done here.

    python3 prewarm.py [--precision default|strict|tf32] WORKERS PROBLEM...

Compiles under the precision policy's flags, as `kernelskill bench --precision NAME` times its
baselines (the flags are part of what torch.compile caches); `--tf32` is `--precision tf32`.
"""
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path


def warm(path: str, precision: str = "default") -> str:
    import torch
    from kernelskill.eval.harness import make_inputs
    from kernelskill.eval.precision import policy
    from kernelskill.eval.problem import load_problem

    t0 = time.time()
    try:
        p = load_problem(Path(path).read_text(), "full", path)
        flags = policy(precision)
        torch.backends.cuda.matmul.allow_tf32 = flags.matmul_tf32
        torch.backends.cudnn.allow_tf32 = flags.conv_tf32
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
    precision = "default"
    if args[:1] == ["--tf32"]:
        precision, args = "tf32", args[1:]
    elif args[:1] == ["--precision"]:
        precision, args = args[1], args[2:]
    with ProcessPoolExecutor(int(args[0])) as pool:
        for line in pool.map(warm, args[1:], [precision] * len(args[1:])):
            print(line, flush=True)

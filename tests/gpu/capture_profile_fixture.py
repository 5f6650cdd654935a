"""Capture profiler fixtures on the GPU: torch.profiler kernel timeline (JSON) of one forward.

    python3 prof_fixture.py PROBLEM [CANDIDATE|eager] OUT.json
Run under `ncu --profile-from-start off` to get Nsight Compute sections for the same forward.
"""
import json
import sys
from pathlib import Path

import torch
from kernelskill.eval.problem import load_candidate, load_problem

prob_path, cand_path, out = sys.argv[1], sys.argv[2], sys.argv[3]
p = load_problem(Path(prob_path).read_text(), "full", prob_path)
torch.manual_seed(0)
cls = p.model_cls if cand_path == "eager" else load_candidate(Path(cand_path).read_text(), cand_path).ModelNew
model = cls(*p.get_init_inputs()).cuda()
with torch.device("cuda"):
    inputs = [x for x in p.get_inputs()]
with torch.no_grad():
    for _ in range(3):
        model(*inputs)
    torch.cuda.synchronize()
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
        model(*inputs)
        torch.cuda.synchronize()
    torch.cuda.profiler.start()
    model(*inputs)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
kernels = []
for e in prof.events():
    if e.device_type == torch.autograd.DeviceType.CUDA and e.device_time > 0:
        kernels.append({"name": e.name, "start_us": e.time_range.start, "dur_us": e.device_time})
kernels.sort(key=lambda k: k["start_us"])
with open(out, "w") as fh:
    json.dump({"problem": prob_path, "candidate": cand_path, "gpu": torch.cuda.get_device_name(),
               "kernels": kernels,
               "summary": [{"name": a.key, "device_time_us": a.device_time_total, "count": a.count}
                           for a in prof.key_averages() if a.device_time_total > 0]}, fh, indent=1)
print(f"{len(kernels)} kernels -> {out}")

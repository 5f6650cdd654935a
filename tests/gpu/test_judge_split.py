"""The split judge on a GPU (run on the H200: `python -m pytest -q -s tests/gpu/test_judge_split.py`).

Outputs come back through CUDA IPC into the judge's slots and are judged against float64; a Triton
candidate and a CUDA-graph-replay candidate are correct with sane timings; a plain-PyTorch copy of
the reference is correct and prints its time against eager's (the split's cost on the measured
time); a side-stream cheat is rejected by the judge's wall clock; full level-1 evaluations with
baselines are correct. Each test prints its timings and evaluation seconds for the record: they
are measurements (issue 22 bounds them, problems/measurements/ records them), not assertions, so
a slow or shared machine does not fail a test."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from kernelskill.eval.api import _run_worker, evaluate
from kernelskill.eval.types import EvalOptions, EvalResult

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
from candidates import good  # noqa: E402

pytestmark = pytest.mark.gpu
RELU = (ROOT / "tests" / "fixtures" / "relu_scale.py").read_text()
OPTS = EvalOptions(device="cuda", size="full", trials=3, timeout_s=300, baselines=True)
HEAD = "import torch\nimport torch.nn as nn\n"
INIT = ("class ModelNew(nn.Module):\n    def __init__(self, cols):\n        super().__init__()\n"
        "        self.bias = nn.Parameter(torch.randn(cols))\n")


def show(label: str, r: EvalResult, seconds: float) -> None:
    print(f"\n{label}: correct={r.correct} stage={r.stage} checks={r.failed_checks} reason={r.reason}\n"
          f"  runtime {r.runtime_ms} ms, judge wall {r.wall_ms} ms, eager {r.eager_ms} ms, compile "
          f"{r.compile_ms} ms, floor {r.floor_ms} ms, kernels {r.kernel_names}, err {r.max_abs_err}, "
          f"evaluation {seconds:.1f} s (judge {r.elapsed_s} s), seconds per stage {r.stage_seconds}")


def timed(label: str, fn, *args) -> tuple[EvalResult, float]:  # noqa: ANN001
    t0 = time.time()
    r = fn(*args)
    show(label, r, time.time() - t0)
    return r, time.time() - t0


def test_cuda_ipc_roundtrip(tmp_path: Path) -> None:
    """The transport alone: judge-owned inputs and output slots shared by CUDA IPC, one forward."""
    import torch
    from kernelskill.eval.judge.link import CandidateLink
    from kernelskill.eval.judge.remote import Remote

    src = HEAD + "class ModelNew(nn.Module):\n    def forward(self, x):\n        return x.t() * 2.0\n"
    pool = torch.cuda.MemPool()
    x = torch.randn(300, 500, device="cuda")
    with CandidateLink("cuda", time.monotonic() + 120) as link:
        remote = Remote(link, "cuda", pool)
        t0 = time.perf_counter()
        print(f"\n  ping {remote.ping_ms():.3f} ms (candidate start {time.perf_counter() - t0:.1f} s)")
        assert link.request({"cmd": "init", "device": "cuda", "precision": "default", "source": src,
                             "filename": "c.py", "weight_seed": 1, "init_values": []})["ok"]
        remote.set_contract(x.t() * 2.0, [x])
        remote.add_set(0, [x])
        for mode in ("trial", "timed"):
            fwd = remote.forward(0, [x], mode, "runtime_error")
            assert fwd.broken is None and not fwd.mutated
            assert torch.equal(fwd.out, x.t() * 2.0)
            print(f"  {mode}: candidate {fwd.ms:.3f} ms, judge wall {fwd.wall_ms:.3f} ms")


def test_triton_candidate_through_cuda_ipc() -> None:
    r, _ = timed("triton relu_scale", evaluate, RELU, good(), OPTS)
    assert r.correct, r.reason
    assert r.kernel_names == ["relu_scale_kernel"] and r.max_abs_err < 1e-5  # values intact through IPC
    assert 0.001 < r.runtime_ms < 5.0 and r.eager_ms and r.compile_ms
    assert 0.2 < r.speedup_vs_eager < 20


def test_pytorch_copy_times_like_eager() -> None:
    # The same computation as the reference: the split's candidate timing must match the judge's
    # own eager timing within noise (the overhead of the split on the measured time).
    src = HEAD + INIT + "\n    def forward(self, x):\n        return torch.relu(x + self.bias) * 2.0\n"
    r, _ = timed("pytorch copy", evaluate, RELU, src, OPTS)
    assert r.correct, r.reason
    ratio = r.runtime_ms / r.eager_ms
    print(f"  candidate (split) / eager (judge) = {ratio:.3f}")


def test_baselines_in_their_own_process() -> None:
    # eval/judge/baselines.py: eager and torch.compile both timed in the reference's process (the
    # first H200 run, 2026-12-03, fell back to the judge for torch.compile: filelock's audit hook:
    # problems/measurements/h200-2026-12-03-sandbox-overhead/call3b_audit_hook.txt).
    r, _ = timed("baselines in process", evaluate, RELU, good(),
                 EvalOptions(device="cuda", size="full", trials=3, timeout_s=300, baselines_in="process"))
    assert r.correct, r.reason
    assert r.baselines_in == "process", r.log_tail[-1500:]
    assert r.eager_ms and r.compile_ms


GRAPH = HEAD + INIT + '''
        self.graph = None

    def _eager(self, x):
        return torch.relu(x + self.bias) * 2.0

    def forward(self, x):
        if self.graph is None or self.static_x.shape != x.shape:
            self.static_x = x.clone()
            self.static_y = self._eager(self.static_x)  # warm-up outside the capture
            torch.cuda.synchronize()
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                self.static_y = self._eager(self.static_x)
        self.static_x.copy_(x)
        self.graph.replay()
        return self.static_y
'''


def test_cuda_graph_replay_candidate() -> None:
    r, _ = timed("cuda graph replay", _run_worker, RELU, GRAPH, OPTS, "relu_scale.py", "graph.py",
                 EvalResult(device="cuda"))
    assert r.correct, r.reason
    assert 0.001 < r.runtime_ms < 5.0


SIDE_STREAM = HEAD + INIT + '''
        self.side = torch.cuda.Stream()
        self.w = None

    def forward(self, x):
        if self.w is None:
            self.w = torch.randn(x.shape[-1], x.shape[-1], device=x.device)
        with torch.cuda.stream(self.side):  # nothing waits for this stream before forward returns
            z = x
            for _ in range(50):
                z = z @ self.w * 1e-3
            y = torch.relu(x + self.bias) * 2.0 + 0.0 * z
        return y
'''


def test_side_stream_cheat_is_rejected() -> None:
    r, _ = timed("side stream", _run_worker, RELU, SIDE_STREAM, OPTS, "relu_scale.py", "side.py",
                 EvalResult(device="cuda"))
    assert not r.correct
    assert r.stage in ("correctness", "timing"), r.reason
    assert set(r.failed_checks) & {"hidden_work", "wrong_output", "timed_output", "below_floor"}, r.reason


@pytest.mark.parametrize("name", ["01_matmul_square", "11_gelu", "22_softmax_last_dim"])
def test_level1_builtin_candidates_with_baselines(name: str) -> None:
    from kernelskill.authors.base import AuthorTask
    from kernelskill.authors.builtin.author import BuiltinAuthor
    from kernelskill.state.records import Problem

    src = (ROOT / "problems" / "level1" / f"{name}.py").read_text()
    cand = BuiltinAuthor().generate(AuthorTask(problem=Problem(name=name, path=f"<{name}>", source=src,
                                                               size="full"), device="cuda"))
    r, _ = timed(name, evaluate, src, cand.source, EvalOptions(device="cuda", size="full"))
    assert r.correct, r.reason
    assert r.eager_ms and r.speedup_vs_eager and r.speedup_vs_eager > 0.1

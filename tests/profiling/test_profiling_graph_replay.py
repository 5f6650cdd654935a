"""Nsight Compute counters for a forward that replays a CUDA graph, on CPU.

The timeline is of the replayed forward; ncu measures the same kernels launched without replay
(profile.forward_for_counters). The replayed timeline here is derived from the real H200 capture
of conv + batch norm + ReLU (tests/fixtures/profiles/conv_bn_relu_eager.*): the wrapper's input
copy and output clone (Memcpy DtoD) are added around the same kernels, as a replay runs them.
"""

from __future__ import annotations

import json
import stat
import time
from pathlib import Path

import pytest
from kernelskill.profiling import ncu as N
from kernelskill.profiling.profile import ProfileOptions, forward_for_counters, replays_graph, run_ncu
from kernelskill.profiling.timeline import Launch, attach_ncu, ncu_selection, timeline_of

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "fixtures" / "profiles"


def eager_launches() -> list[Launch]:
    data = json.loads((FIX / "conv_bn_relu_eager.torch.json").read_text())
    return [Launch(k["name"], k["start_us"], k["dur_us"]) for k in data["kernels"]]


def replayed_launches() -> list[Launch]:
    """The fixture's kernels as a replay launches them: input copy first, output clone last, and
    (as for a non-contiguous input) one copy kernel ncu's forward without replay never launches."""
    ls = eager_launches()
    first, last = ls[0].start_us, ls[-1].start_us + ls[-1].dur_us
    copy = "void at::native::elementwise_kernel<128, 2, at::native::direct_copy_kernel_cuda>(int)"
    return [Launch("Memcpy DtoD (Device -> Device)", first - 30.0, 20.0, kind="memcpy"),
            Launch(copy, first - 8.0, 6.0), *ls,
            Launch("Memcpy DtoD (Device -> Device)", last + 1.0, 25.0, kind="memcpy")]


def rows() -> list[N.NcuKernel]:
    return N.parse_csv((FIX / "conv_bn_relu_eager.ncu.csv").read_text())


def test_rows_of_the_forward_without_replay_attach_to_the_replayed_timeline() -> None:
    ls = replayed_launches()
    tl = timeline_of(ls)
    regex, count = ncu_selection(ls, tl, 8)
    assert regex is None and count == 7  # every kernel launch; the copies are not kernels
    assert attach_ncu(tl, ls, rows(), regex) == 5  # 5 kernel names, the extra copy kernel has no row
    by_name = {k.name[:30]: k for k in tl.kernels}
    conv = next(k for k in tl.kernels if k.name.startswith("sm80_xmma_fprop"))
    assert conv.ncu is not None and conv.ncu.occupancy_limiter == "registers"
    assert all(k.ncu is None for k in tl.kernels if k.kind == "memcpy" or "direct_copy" in k.name), by_name
    # Shares stay those of the replay: the copies take their part of the busy time.
    memcpy = next(k for k in tl.kernels if k.kind == "memcpy")
    assert memcpy.launches == 2 and memcpy.share == pytest.approx(45.0 / tl.busy_us)


def test_a_row_with_no_launch_of_its_name_is_dropped_without_losing_the_rest() -> None:
    # A real row of another capture (the hand-written softmax) ahead of the conv forward's rows:
    # the matching used to stop at it and attach nothing.
    stray = N.parse_csv((FIX / "softmax_hand.ncu.csv").read_text())
    ls = eager_launches()
    tl = timeline_of(ls)
    assert attach_ncu(tl, ls, stray + rows(), None) == 5
    assert all(k.ncu is not None for k in tl.kernels)


def test_ncu_asks_for_graph_nodes_and_knows_when_an_older_ncu_refuses_the_option() -> None:
    cmd = N.command("ncu", ["python"], kernel_regex=None, launch_count=4)
    assert cmd[cmd.index("--graph-profiling") + 1] == "node"
    older = N.command("ncu", [], kernel_regex=None, launch_count=1, graph_nodes=False)
    assert "--graph-profiling" not in older
    refused = "==ERROR== unrecognised option '--graph-profiling'. Use --help for further details."
    assert N.unknown_option(refused, "--graph-profiling") and not N.unknown_metric(refused)
    assert not N.unknown_option("==PROF== --graph-profiling node", "--graph-profiling")


def fake_ncu(tmp_path: Path, body: str) -> str:
    """An `ncu` stand-in: a shell script that answers from its arguments (no GPU, no target run)."""
    exe = tmp_path / "ncu"
    exe.write_text("#!/bin/sh\n" + body)
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return str(exe)


def test_run_ncu_retries_without_the_option_an_older_ncu_refuses(tmp_path: Path) -> None:
    csv = FIX / "conv_bn_relu_eager.ncu.csv"
    exe = fake_ncu(tmp_path, f"""case "$*" in
  *--graph-profiling*) echo "==ERROR== unrecognised option '--graph-profiling'"; exit 1;;
  *) cat "{csv}";;
esac
""")
    ls = replayed_launches()
    tl = timeline_of(ls)
    status = run_ncu(exe, {}, ProfileOptions(), ls, tl, time.time() + 60, tmp_path, graph_replay=True)
    assert status == "ok: launches profiled 6, kernels 5 (graph kernels launched without replay)"
    assert sum(k.ncu is not None for k in tl.kernels) == 5


def test_run_ncu_says_why_it_failed(tmp_path: Path) -> None:
    exe = fake_ncu(tmp_path, 'echo "==ERROR== ERR_NVGPUCTRPERM - no permission"; exit 1\n')
    ls = eager_launches()
    status = run_ncu(exe, {}, ProfileOptions(), ls, timeline_of(ls), time.time() + 60, tmp_path)
    assert status == "failed: no permission to read GPU performance counters (ERR_NVGPUCTRPERM)"
    status = run_ncu(exe, {}, ProfileOptions(), ls, timeline_of(ls), time.time() + 2, tmp_path)
    assert status.startswith("skipped:")


class _Wrapped:
    """The attributes the runtime's graph-replay wrapper gives ModelNew (graph_forward.py)."""

    def __init__(self, graphs: dict) -> None:
        self._cuda_graphs = graphs

    def _eager_forward(self, x: int) -> int:
        return x + 1

    def __call__(self, x: int) -> int:
        return self._eager_forward(x)


def test_which_forward_ncu_profiles_and_whether_the_timeline_replayed() -> None:
    kept, plain = _Wrapped({"sig": ("graph", [], None)}), _Wrapped({"sig": False})
    assert forward_for_counters(kept) == kept._eager_forward and replays_graph(kept)
    assert forward_for_counters(plain) == plain._eager_forward and not replays_graph(plain)
    other = object()
    assert forward_for_counters(other) is other and not replays_graph(other)


def test_the_builtin_authors_graph_replay_candidate_has_the_forward_ncu_profiles() -> None:
    import torch
    from kernelskill.authors.base import AuthorTask
    from kernelskill.authors.builtin.author import BuiltinAuthor
    from kernelskill.eval import harness as H
    from kernelskill.eval.problem import load_candidate, load_problem
    from kernelskill.state.records import Problem

    path = ROOT / "problems" / "level2" / "11_conv2d_hardswish_residual.py"
    src = path.read_text()
    task = AuthorTask(problem=Problem(name=path.stem, path=str(path), source=src, size="small"), device="cpu",
                      precision="default")
    cand = BuiltinAuthor().generate(task)
    assert "_cuda_graphs" in cand.source  # the first candidate replays where replay pays
    problem = load_problem(src, "small", str(path))
    model = H.build(load_candidate(cand.source, "candidate.py").ModelNew, problem, 0, "cpu")
    forward = forward_for_counters(model)
    assert forward == model._eager_forward
    x = H.make_inputs(problem, 0, "cpu")
    with torch.no_grad():
        assert torch.equal(forward(*x), model(*x)) and not replays_graph(model)  # CPU: never captured

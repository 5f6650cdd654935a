"""CUDA-graph replay of the whole forward (skills/cuda-graph-replay): checked on the CPU
(fall-through, declined host syncs, the size limit, static checks) and, with the `gpu` marker,
by real capture, the first call's timing of replay against plain calls, and replay.
(test_graph_replay_choice.py checks the timing rule itself on the CPU.)
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch
from author_util import evaluate, expr_problem, generate, problem, templates_used
from kernelskill.eval.static.checks import run_static_checks

ROOT = Path(__file__).resolve().parents[2]


def _load(source: str, tmp_path: Path, name: str):  # noqa: ANN202
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ---- CUDA-graph replay ---------------------------------------------------------------------------------
GRAPH = "cuda-graph-replay"


@pytest.mark.parametrize("path", ["level3/01_mlp.py", "level3/08_lstm_cell_loop.py", "level1/29_cumsum.py"])
def test_graph_wrapper_falls_through_on_cpu(path: str) -> None:
    src = (ROOT / "problems" / path).read_text()
    cand = generate(src, skill=GRAPH)
    assert GRAPH in templates_used(cand)
    assert "torch.cuda.graph(graph)" in cand.source and "def _eager_forward(" in cand.source
    assert run_static_checks(cand.source) == []
    result = evaluate(src, cand.source, trials=1)
    assert result.correct, result.reason


HEAD = "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"


def test_a_recurrent_module_is_replayed_from_the_first_candidate() -> None:
    """No template writes a GRU's kernels, and its time steps are launch-bound: the first
    candidate asks for replay (the wrapper's first-call trial keeps it only where it wins); a
    model without one does not, and a repair that turns replay off is obeyed."""
    from kernelskill.authors.base import AuthorTask
    from kernelskill.authors.builtin.author import BuiltinAuthor
    from kernelskill.state.author_state import BuiltinConfig

    src = (ROOT / "problems" / "level3" / "07_gru_stack.py").read_text()
    cand = generate(src)
    assert templates_used(cand) == [GRAPH] and "torch.cuda.graph(graph)" in cand.source
    assert evaluate(src, cand.source).correct  # on the CPU the plain forward, unchanged
    assert GRAPH not in templates_used(generate((ROOT / "problems" / "level1" / "11_gelu.py").read_text()))
    author = BuiltinAuthor()
    task = AuthorTask(problem=problem(src), device="cpu")
    off = author._build(task, BuiltinConfig(disabled=[GRAPH]), note="repaired")
    assert templates_used(off) == [] and "torch.cuda.graph" not in off.source


def test_graph_wrapper_declines_host_syncs_and_keeps_init() -> None:
    wrap = _wrap()
    assert wrap(HEAD + "    def forward(self, x):\n        return x * (x.sum().item() > 0)\n") is None
    assert wrap(HEAD + "    def forward(self, x):\n        return x[x.nonzero()]\n") is None
    no_init = wrap(HEAD + "    def forward(self, x, k=2):\n        return x * k\n")
    ns: dict = {}
    exec(compile(no_init, "<w>", "exec"), ns)
    m = ns["ModelNew"]()
    assert m._cuda_graphs == {} and torch.equal(m(torch.ones(3)), torch.full((3,), 2.0))
    last_init = wrap(HEAD + "    def forward(self, x):\n        return x + self.b\n\n"
                     "    def __init__(self):\n        super().__init__()\n"
                     "        if True:\n            self.b = nn.Parameter(torch.ones(3))\n")
    ns = {}
    exec(compile(last_init, "<w>", "exec"), ns)
    m = ns["ModelNew"]()
    assert m._cuda_graphs == {} and [n for n, _ in m.named_parameters()] == ["b"]
    assert torch.equal(m(torch.ones(3)), torch.full((3,), 2.0))
    assert run_static_checks(last_init) == [] and run_static_checks(no_init) == []


def test_graph_wrapper_runs_large_inputs_plainly() -> None:
    """Each replay copies the inputs into the graph's buffers and the outputs out of them, so inputs
    plus outputs above 192 MB in total take the plain forward (the copies cost more than replay
    saves); meta tensors hold no memory."""
    from kernelskill.authors.builtin.runtime import GRAPH_REPLAY

    ns: dict = {"torch": torch}
    exec(compile(GRAPH_REPLAY, "<graph helpers>", "exec"), ns)  # noqa: S102  (the wrapper's own helpers)
    small = ns["_graph_small"]
    mb = 1 << 20
    assert small([torch.empty(48 * mb, device="meta")])  # 192 MB of fp32: at the limit
    assert not small([torch.empty(48 * mb + 1, device="meta")])
    assert not small([torch.empty(30 * mb, device="meta"), torch.empty(19 * mb, device="meta")])  # in total
    assert small([torch.empty(90 * mb, dtype=torch.float16, device="meta")])  # bytes, not elements
    out = torch.empty(mb, device="meta")
    assert ns["_graph_tensors"]({"a": (out, [out, 3]), "b": None}) == [out, out]  # nested outputs


def _wrap():  # noqa: ANN202
    from kernelskill.authors.builtin.templates.loader import load_templates

    return lambda s: load_templates()[GRAPH].wrap(s, None)


GRAPH_MODELS = {
    # Only this family's templates (plus the fused elementwise one): a scan between pointwise chains.
    "scan": (expr_problem("torch.sigmoid(torch.cumsum(torch.relu(x) - 0.5, dim=1).flip(1)) * 2",
                     "torch.randn(9, 40)"), ()),
    "mlp": ((ROOT / "problems" / "level3/01_mlp.py").read_text(), (40, [66, 66, 33], 10)),
}


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(GRAPH_MODELS))
def test_graph_replay_on_gpu(name: str, tmp_path: Path) -> None:
    src, init = GRAPH_MODELS[name]
    cand = generate(src, skill=GRAPH)
    assert GRAPH in templates_used(cand)
    mod = _load(cand.source, tmp_path, f"graph_cand_{name}")
    sys.modules.pop(f"graph_cand_{name}", None)
    torch.manual_seed(0)
    model = mod.ModelNew(*init).cuda()
    with torch.no_grad():
        xs = [torch.randn(9, 40, device="cuda") for _ in range(3)]
        outs = [model(x) for x in xs]
        assert len(model._cuda_graphs) == 1
        for x, out in zip(xs, outs, strict=True):  # every call computed on its own input, kept intact
            torch.testing.assert_close(out, model._eager_forward(x), rtol=1e-5, atol=1e-5)
        model(torch.randn(5, 40, device="cuda"))
        model(torch.randn(40, 9, device="cuda").t())
        assert len(model._cuda_graphs) == 3  # a new shape and a new stride signature
        model(xs[0].cpu().cuda())
        assert len(model._cuda_graphs) == 3
        assert all(entry is not False for entry in model._cuda_graphs.values())  # small: replayed
    torch.testing.assert_close(model(xs[0]), model._eager_forward(xs[0]))  # grad enabled: no graph
    assert len(model._cuda_graphs) == 3


@pytest.mark.gpu
@pytest.mark.parametrize("cols", [8192, 4096])
def test_graph_replay_is_declined_where_copies_cost_more_than_it_saves(tmp_path: Path, cols: int) -> None:
    """One memory-bound kernel, far from launch-bound: copying its input and output through the
    graph's buffers would triple the traffic, so the signature is marked plain after the first
    call. With 128 MB in and 128 MB out the size gate declines it without capturing; with 64 MB
    each, under the gate, the first call's timing does (the conv case: a 66 us input copy per
    call that saved nothing)."""
    cand = generate(expr_problem("torch.relu(x) * 2.0", f"torch.randn(4096, {cols})"), skill=GRAPH)
    mod = _load(cand.source, tmp_path, f"graph_cand_stream_{cols}")
    sys.modules.pop(f"graph_cand_stream_{cols}", None)
    model = mod.ModelNew().cuda()
    with torch.no_grad():
        for _ in range(2):
            x = torch.randn(4096, cols, device="cuda")
            torch.testing.assert_close(model(x), torch.relu(x) * 2.0)
        assert list(model._cuda_graphs.values()) == [False]


BN_MODEL = expr_problem("torch.relu(self.bn(self.lin(x)))", "torch.randn(9, 40)",
                   init="self.lin = nn.Linear(40, 24)\nself.bn = nn.BatchNorm1d(24)")


@pytest.mark.gpu
def test_graph_replay_updates_running_statistics_once_per_call(tmp_path: Path) -> None:
    """The first call's warm-up, capture and timing run the forward several more times; the buffers
    they touched are restored, so a training-mode norm's running statistics match eager's after
    every call."""
    cand = generate(BN_MODEL, skill=GRAPH)
    assert GRAPH in templates_used(cand)
    mod = _load(cand.source, tmp_path, "graph_cand_bn")
    ref_mod = _load(BN_MODEL, tmp_path, "graph_ref_bn")
    sys.modules.pop("graph_cand_bn", None)
    sys.modules.pop("graph_ref_bn", None)
    torch.manual_seed(0)
    model = mod.ModelNew().cuda()
    torch.manual_seed(0)
    ref = ref_mod.Model().cuda()
    with torch.no_grad():
        for _ in range(3):
            x = torch.randn(9, 40, device="cuda")
            torch.testing.assert_close(model(x), ref(x), rtol=1e-4, atol=1e-4)
            torch.testing.assert_close(model.bn.running_mean, ref.bn.running_mean, rtol=1e-5, atol=1e-6)
            torch.testing.assert_close(model.bn.running_var, ref.bn.running_var, rtol=1e-5, atol=1e-6)
        assert len(model._cuda_graphs) == 1
        assert int(model.bn.num_batches_tracked) == int(ref.bn.num_batches_tracked) == 3


BIG_OUT = expr_problem("torch.relu(x @ self.w)", "torch.randn(8192, 64)",
                  init="self.w = nn.Parameter(torch.randn(64, 16400))")


@pytest.mark.gpu
def test_graph_replay_leaves_large_outputs_to_the_plain_forward(tmp_path: Path) -> None:
    """A 538 MB output would be copied out of the graph on every call: its signature is marked
    plain after the first call's warm-up (nothing is captured or timed), and calls run eagerly."""
    cand = generate(BIG_OUT, skill=GRAPH)
    mod = _load(cand.source, tmp_path, "graph_cand_big")
    sys.modules.pop("graph_cand_big", None)
    torch.manual_seed(0)
    model = mod.ModelNew().cuda()
    with torch.no_grad():
        for _ in range(2):
            x = torch.randn(8192, 64, device="cuda")
            torch.testing.assert_close(model(x), model._eager_forward(x), rtol=1e-5, atol=1e-5)
        assert list(model._cuda_graphs.values()) == [False]


DROPOUT = HEAD + "    def forward(self, x):\n        return nn.functional.dropout(x * 2.0, 0.5, True)\n"


@pytest.mark.gpu
def test_graph_replay_draws_random_numbers_once_per_call() -> None:
    """The first call's trial runs draw from the CUDA generator; its state is put back, so after
    each call it is where the plain forward leaves it, and each call draws what the plain forward
    would have drawn."""
    ns: dict = {}
    exec(compile(_wrap()(DROPOUT), "<w>", "exec"), ns)
    model = ns["ModelNew"]().cuda()
    x = torch.randn(64, 64, device="cuda")
    with torch.no_grad():
        torch.cuda.manual_seed(0)
        want = [model._eager_forward(x) for _ in range(2)]
        state = torch.cuda.get_rng_state()
        torch.cuda.manual_seed(0)
        got = [model(x) for _ in range(2)]
        assert len(model._cuda_graphs) == 1
        assert torch.equal(torch.cuda.get_rng_state(), state)
        torch.testing.assert_close(got, want)  # graph-safe draws: the numbers eager draws
        assert not torch.equal(got[0], got[1])  # the second call drew new numbers

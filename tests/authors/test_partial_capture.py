"""Partial capture (frontend/partial.py): a forward torch.fx cannot trace whole keeps its Python
control flow, and the straight-line regions around it run our kernels behind guards; constants
a forward builds (frontend/constants.py) are rebuilt by their expression, never by randomness; a
buffer the forward changes in place keeps changing."""

from __future__ import annotations

import ast

import torch
from author_util import evaluate, generate
from kernelskill.authors.builtin.frontend.constants import ConstantRecorder
from kernelskill.authors.builtin.frontend.partial import capture_partial
from kernelskill.eval.problem import exec_module, load_problem

BRANCH = '''"""A branch on the sign of a sum."""
import torch
import torch.nn as nn

N = 24
D = 40
SMALL = {"N": 4, "D": 6}


class Model(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            y = torch.relu(x) * 2.0
        else:
            y = torch.tanh(x) - 1.0
        return y + 1.0


def get_inputs():
    return [torch.randn(N, D)]


def get_init_inputs():
    return []
'''


def _forward(source: str) -> ast.FunctionDef:
    cls = next(n for n in ast.parse(source).body if isinstance(n, ast.ClassDef) and n.name == "ModelNew")
    return next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "forward")


def _calls(nodes: list[ast.stmt], prefix: str) -> list[str]:
    return [n.func.id for s in nodes for n in ast.walk(s)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id.startswith(prefix)]


def test_both_sides_of_a_value_branch_run_our_kernels_and_stay_correct() -> None:
    cand = generate(BRANCH)
    branch = next(s for s in _forward(cand.source).body if isinstance(s, ast.If))
    assert ast.unparse(branch.test) == "x.sum() > 0"  # the control flow as written
    assert _calls(branch.body, "_pointwise_") and _calls(branch.orelse, "_pointwise_")
    ref = load_problem(BRANCH, "small").model_cls()
    new = exec_module(cand.source, "<candidate>", "cand").ModelNew()
    x = torch.randn(4, 6).abs()
    for inp in (x, -x, torch.randn(3, 5), -torch.randn(7, 2).abs()):  # both sides; other shapes
        torch.testing.assert_close(new(inp), ref(inp))


def test_guards_hold_the_captured_layout() -> None:
    cand = generate(BRANCH)
    assert "_guard_fits(x, (4, 6), (6, 1), torch.float32)" in cand.source
    assert "cuda-graph-replay" not in cand.author_state.templates  # one graph cannot branch


def test_full_size_capture_replays_the_small_runs_on_meta() -> None:
    cand = generate(BRANCH, size="full")
    assert "_guard_fits(x, (24, 40), (40, 1), torch.float32)" in cand.source
    result = evaluate(BRANCH, cand.source, trials=1, size="full")
    assert result.correct and result.custom_kernels > 0, result.reason


def test_a_loop_on_a_value_stays_python_with_its_body_captured() -> None:
    src = BRANCH.replace('''        if x.sum() > 0:
            y = torch.relu(x) * 2.0
        else:
            y = torch.tanh(x) - 1.0
        return y + 1.0''', '''        y = x * 0.5
        for _ in range(int(x.abs().sum().item()) % 3 - 3):  # never entered: forced once
            y = torch.sigmoid(y) + x
        return y''')
    fwd = _forward(generate(src).source)
    loop = next(s for s in fwd.body if isinstance(s, ast.For))
    assert "item()" in ast.unparse(loop.iter) and _calls(loop.body, "_pointwise_")
    result = evaluate(src, generate(src).source, trials=2)
    assert result.correct and result.custom_kernels > 0, result.reason


def test_constants_keep_their_expression_until_changed_in_place() -> None:
    with ConstantRecorder() as rec:
        scale = torch.arange(5000, dtype=torch.float32) / 5000
        mask = torch.triu(torch.ones(80, 80), diagonal=1).bool()
        noise = torch.randn(3)
        changed = torch.ones(4)
        changed[0] = 2.0
        looked_up = rec.expr_of(scale), rec.expr_of(mask), rec.expr_of(noise), rec.expr_of(changed)
    assert looked_up == ("torch.arange(5000, dtype=torch.float32).div(5000)",
                         "torch.triu(torch.ones(80, 80), diagonal=1).bool()", None, None)
    torch.testing.assert_close(eval(looked_up[0], {"torch": torch}), scale)


def test_state_updates_stay_python() -> None:
    src = BRANCH.replace('''    def forward(self, x):
        if x.sum() > 0:''', '''    def __init__(self):
        super().__init__()
        self.calls = 0
        self.register_buffer("decay", torch.ones(6))

    def forward(self, x):
        self.calls = self.calls + 1
        self.decay.mul_(0.5)
        x = x * 2.0 + self.decay
        if x.sum() > 0:''')
    cand = generate(src)
    new = exec_module(cand.source, "<candidate>", "cand").ModelNew()
    ref = load_problem(src, "small").model_cls()
    x = torch.randn(4, 6)
    for inp in (x, -x):
        torch.testing.assert_close(new(inp), ref(inp))
    assert new.calls == 2 and _calls(_forward(cand.source).body, "_pointwise_")
    torch.testing.assert_close(new.decay, torch.full((6,), 0.25))


def test_a_loop_counter_is_read_at_run_time_only_where_it_keeps_shapes() -> None:
    loop = BRANCH.replace('''        if x.sum() > 0:
            y = torch.relu(x) * 2.0
        else:
            y = torch.tanh(x) - 1.0
        return y + 1.0''', '''        y = x[:, 0] * 0.0
        for t in range(int(x.abs().sum().item()) % 3 + 2):
            y = torch.tanh(x[:, t] + y) * t
        return y''')
    cand = generate(loop)
    assert "_guard_int(t)" in cand.source
    result = evaluate(loop, cand.source, trials=2)
    assert result.correct and result.custom_kernels > 0, result.reason
    sliced = loop.replace("torch.tanh(x[:, t] + y) * t", "torch.tanh(x[:, :t + 1].sum(dim=1) + y)")
    cand = generate(sliced)
    assert "_guard_int(t)" not in cand.source and "_guard_is(t, 0)" in cand.source  # a size: baked
    result = evaluate(sliced, cand.source, trials=2)
    assert result.correct, result.reason


def test_a_buffer_changed_in_place_stays_in_the_whole_capture() -> None:
    # Plain fx would run `self.decay.mul_` on the real buffer while tracing and record nothing.
    src = BRANCH.replace('''    def forward(self, x):
        if x.sum() > 0:
            y = torch.relu(x) * 2.0
        else:
            y = torch.tanh(x) - 1.0
        return y + 1.0''', '''    def __init__(self):
        super().__init__()
        self.register_buffer("decay", torch.ones(6))

    def forward(self, x):
        self.decay.mul_(0.5)
        return torch.relu(x) * 2.0 + self.decay''')
    cand = generate(src)
    assert not cand.author_state.partial and "self.decay.mul_(0.5)" in cand.source
    new = exec_module(cand.source, "<candidate>", "cand").ModelNew()
    for _ in range(2):
        new(torch.randn(4, 6))
    torch.testing.assert_close(new.decay, torch.full((6,), 0.25))


def test_a_statement_fx_cannot_trace_is_traced_once() -> None:
    # Runs never cross it, so the code before it is not retraced for every possible end of a run.
    src = BRANCH.replace('''class Model(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            y = torch.relu(x) * 2.0
        else:
            y = torch.tanh(x) - 1.0
        return y + 1.0''', '''CALLS = []


def gate(x):
    CALLS.append(1)
    return x.sum() > 0


class Model(nn.Module):
    def forward(self, x):
        a = x * 2.0
        c = torch.relu(a + 1.0)
        if gate(c):
            c = c * 3.0
        d = torch.tanh(c - 1.0)
        e = d * 0.5
        return e + a''')
    cap = capture_partial(src)
    assert cap.partial is not None and len(cap.partial.segments) == 3
    assert len(cap.problem.module.CALLS) <= 3  # one trace of the `if` alone: plain fx, the shape tracer twice

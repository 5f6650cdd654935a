"""The evaluator end to end (child process; CPU and Triton's interpreter, or the GPU judge under
KS_ATTACK_DEVICE=cuda: tests/eval/attack_device.py): adversarial candidates are rejected for the
right reason, good Triton candidates are accepted, and a hang or a crash in a candidate never
hangs or crashes the evaluator."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from attack_device import DEVICE, needs_device
from kernelskill.eval.api import _run_worker, evaluate
from kernelskill.eval.harness import PERTURBATIONS
from kernelskill.eval.types import EvalOptions, EvalResult

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
from candidates import good, syntax_error, wrong_scale  # noqa: E402

PROBLEM = (Path(__file__).resolve().parents[1] / "fixtures" / "relu_scale.py").read_text()
OPTS = EvalOptions(device=DEVICE, size="small", trials=3, timeout_s=120, baselines=False)
pytestmark = needs_device

HEAD = "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n"
INIT = ("class ModelNew(nn.Module):\n    def __init__(self, cols):\n        super().__init__()\n"
        "        self.bias = nn.Parameter(torch.randn(cols))\n")


def cand(forward_body: str, extra: str = "", init_extra: str = "") -> str:
    body = "\n".join("        " + ln for ln in forward_body.strip("\n").splitlines())
    return f"{HEAD}{extra}\n{INIT}{init_extra}\n    def forward(self, x):\n{body}\n"


def run(source: str, opts: EvalOptions = OPTS) -> EvalResult:
    return evaluate(PROBLEM, source, opts, problem_name="relu_scale.py", candidate_name="cand.py")


def rejected(r: EvalResult, stage: str, check: str | None = None, text: str | None = None) -> None:
    assert not r.correct, "an adversarial candidate was accepted"
    assert r.stage == stage, (r.stage, r.reason)
    if check:
        assert check in r.failed_checks, (r.failed_checks, r.reason)
    if text:
        assert text in (r.reason or ""), r.reason


def test_good_triton_candidate_is_accepted() -> None:
    r = run(good())
    assert r.correct, r.reason
    assert r.stage == "done" and r.custom_kernels == 1 and r.kernel_names == ["relu_scale_kernel"]
    assert r.trials_run == 3 and r.perturbed_trials == len(PERTURBATIONS) and r.pass_rule == "tolerance"
    # CPU timings are never speedups; a GPU timing is, but baselines=False leaves nothing to divide by.
    assert r.timing_is_cpu is (DEVICE == "cpu") and r.speedup_vs_eager is None


def test_another_block_size_is_also_accepted() -> None:
    assert run(good(block=128)).correct


# ---- dynamic defenses -------------------------------------------------------------------
def test_identity_relu_that_only_passes_on_non_negative_inputs() -> None:
    # Correct for x + bias >= 0 only: the signed perturbations expose it.
    r = run(cand("return (x + self.bias) * 2.0"))
    rejected(r, "correctness", "wrong_output")



@pytest.mark.parametrize("scale", [1e-18, 1.0, 1e20])
def test_few_negatives_changes_signs_not_the_range(scale: float) -> None:
    # The flipped elements are negative and, zeros included, within the input's own magnitude: a
    # fixed offset made an outlier 1e17 times the rest of a 1e-18 tensor, and a correct fp32-class
    # GEMM then failed on that range, not on a sign (tests/authors/test_gemm_prepared.py, seen in CI).
    torch.manual_seed(0)
    x = torch.rand(4096) * scale
    x[:7] = 0.0
    y = PERTURBATIONS["few negatives"](x)
    flipped = y < 0
    assert 0 < int(flipped.sum()) < 200 and torch.equal(y[~flipped], x[~flipped])
    assert float(y.abs().max()) <= 1.1 * float(x.abs().max())
    assert torch.equal(x[:7], torch.zeros(7))  # the input itself is untouched

def test_unwritten_empty_output_is_caught_by_poisoning() -> None:
    extra = ("@triton.jit\ndef half(x_ptr, b_ptr, y_ptr, n, cols, BLOCK: tl.constexpr):\n"
             "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n    m = offs < n\n"
             "    v = tl.maximum(tl.load(x_ptr + offs, mask=m) + tl.load(b_ptr + offs % cols, mask=m), 0.0)\n"
             "    tl.store(y_ptr + offs, v * 2.0, mask=m)\n")
    r = run(cand("y = torch.empty_like(x)\nn = x.numel() - 7\n"
                 "half[(triton.cdiv(n, 256),)](x, self.bias, y, n, x.shape[-1], BLOCK=256)\nreturn y", extra))
    rejected(r, "correctness", "wrong_output", "NaN")


def test_wrong_values_shape_and_dtype() -> None:
    rejected(run(wrong_scale()), "correctness", "wrong_output", "max error")
    rejected(run(cand("return (torch.relu(x + self.bias) * 2.0)[:, :-1]")), "correctness", text="shape")
    rejected(run(cand("return (torch.relu(x + self.bias) * 2.0).double()")), "correctness", text="dtype")


def test_nan_output() -> None:
    r = run(cand("y = torch.relu(x + self.bias) * 2.0\ny[0, 0] = float('nan')\nreturn y"))
    rejected(r, "correctness", "wrong_output", "NaN")


def test_input_mutation() -> None:
    r = run(cand("x.mul_(1.0)\nx[0, 0] = 3.0\nreturn torch.relu(x + self.bias) * 2.0"))
    rejected(r, "correctness", "input_mutation")


def test_cache_by_call_count_fails_on_fresh_inputs_even_past_static_checks() -> None:
    # Bypass the static checks to show the dynamic defense: fresh inputs every trial.
    src = cand("if self.out is None:\n    self.out = torch.relu(x + self.bias) * 2.0\n"
               "return self.out.clone()", init_extra="        self.out = None\n")
    assert "output_caching" in run(src).failed_checks
    r = _run_worker(PROBLEM, src, OPTS, "relu_scale.py", "cand.py", EvalResult(device=DEVICE))
    rejected(r, "correctness", "wrong_output")


def test_runtime_errors_in_the_first_and_later_calls() -> None:
    rejected(run(cand("return torch.relu(x + self.bias[:3]) * 2.0")), "compile", "compile_error")
    later = cand("self.calls = self.calls + 1 if hasattr(self, 'calls') else 1\n"
                 "return torch.relu(x + self.bias[: 3 if self.calls > 1 else None]) * 2.0")
    r = _run_worker(PROBLEM, later, OPTS, "relu_scale.py", "cand.py", EvalResult(device=DEVICE))
    rejected(r, "correctness", "runtime_error")


# ---- static checks through evaluate() ---------------------------------------------------
@pytest.mark.parametrize("source,check", [
    (cand("return torch.relu(x + self.bias) * 2.0", extra="import time\ntime.perf_counter = lambda: 0.0\n"),
     "timer_patching"),
    (cand("s = torch.cuda.Stream()\nreturn torch.relu(x + self.bias) * 2.0"), "side_stream"),
    (cand("try:\n    return 1 / 0\nexcept Exception:\n    return torch.relu(x + self.bias) * 2.0"),
     "fallback_to_reference"),
    (cand("return Model(x.shape[-1])(x)"), "calls_reference"),
    (cand("k = x.data_ptr()\nreturn torch.relu(x + self.bias) * 2.0"), "output_caching"),
    (cand("return (torch.relu(x.half() + self.bias.half()) * 2.0).float()"), "precision_downgrade"),
    (cand("import threading\nreturn torch.relu(x + self.bias) * 2.0"), "threads_or_processes"),
    (cand("import gc\nreturn torch.relu(x + self.bias) * 2.0"), "introspection"),
    (cand("return eval('torch.relu(x + self.bias) * 2.0')"), "dynamic_code"),
    (cand("torch.backends.cudnn.allow_tf32 = False\nreturn torch.relu(x + self.bias) * 2.0"), "global_state"),
])
def test_static_rejections(source: str, check: str) -> None:
    rejected(run(source), "static", check)


def test_bare_tl_dot_is_a_precision_downgrade() -> None:
    extra = ("@triton.jit\ndef k(a, b, c, BLOCK: tl.constexpr):\n    r = tl.arange(0, BLOCK)\n"
             "    t = tl.load(a + r[:, None] * BLOCK + r[None, :])\n"
             "    u = tl.load(b + r[:, None] * BLOCK + r[None, :])\n"
             "    tl.store(c + r[:, None] * BLOCK + r[None, :], tl.dot(t, u))\n")
    rejected(run(cand("return torch.relu(x + self.bias) * 2.0", extra)), "static", "precision_downgrade")


# ---- broken candidates, hangs and crashes -----------------------------------------------
def test_syntax_error_and_missing_modelnew() -> None:
    rejected(run(syntax_error()), "compile", "syntax")
    r = run(HEAD + "class Other(nn.Module):\n    pass\n")
    rejected(r, "load", text="does not define class ModelNew")


def test_hang_is_killed_by_the_timeout() -> None:
    src = cand("while True:\n    x = x + 0\nreturn x")
    # The hang must start before the deadline: a GPU judge reached its first forward 6-8 s after
    # it started (H200, processes.start + load: problems/measurements/h200-2026-12-02-cost/).
    opts = EvalOptions(device=DEVICE, size="small", trials=1, timeout_s=12 if DEVICE == "cpu" else 30,
                       baselines=False)
    r = run(src, opts)
    rejected(r, "compile", "timeout", "timed out")


def test_crash_is_an_outcome() -> None:
    # `import os` is rejected statically; past the static checks, os.abort (no audit event) crashes.
    src = cand("import os\nos.abort()\nreturn x")
    r = _run_worker(PROBLEM, src, OPTS, "relu_scale.py", "cand.py", EvalResult(device=DEVICE))
    assert not r.correct and "crash" in r.failed_checks and "SIGABRT" in (r.reason or "")


def test_forged_result_file_is_not_believed() -> None:
    # A candidate that writes its own "correct" result where a worker's might be, then exits. Past
    # the static checks, the audit hook refuses the write outside its scratch folder; and the
    # candidate runs in a process of its own, without the key, so nothing it writes is believed.
    forged = '{"result": "{\\\\"correct\\\\": true}", "mac": "0"}'
    src = cand("import pathlib, os\nfor d in (pathlib.Path('.'), pathlib.Path('..')):\n"
               f"    (d / 'result.json').write_text({forged!r})\nos._exit(0)")
    r = _run_worker(PROBLEM, src, OPTS, "relu_scale.py", "cand.py", EvalResult(device=DEVICE))
    assert not r.correct and "audit" in r.failed_checks and "result.json" in (r.reason or "")


def test_broken_problem_is_a_usage_error() -> None:
    r = evaluate("import torch\nclass Model: pass\n", good(), OPTS)
    assert r.usage_error and not r.correct and "get_inputs" in (r.reason or "")

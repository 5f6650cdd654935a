"""The module patterns a user's model contains as a matter of course (tests/authors/corpus/: buffers,
tensor constants, shared weights, module lists, in-place ops, view chains, shape branches,
attention, chunk / split, embeddings, several or scalar outputs) each end correct, most in our
kernels.

Each pattern's first candidate passes the static checks and is judged by the real evaluator (in
this process, CPU, one trial); a failing one is repaired as the graph's repairer would, down to
the last fallback level (the reference verbatim). A pattern runs our Triton kernels unless
`PYTORCH_ONLY` says why not; a pattern listed there that gains kernels fails too, so the list
stays true. One pattern goes through the `kernelskill optimize` command end to end.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from author_util import author, evaluate, problem
from kernelskill.authors.base import AuthorError, AuthorTask
from kernelskill.authors.builtin.emit import assemble_verbatim
from kernelskill.eval.static.checks import problem_is_fp32, run_static_checks
from kernelskill.eval.types import EvalResult
from kernelskill.state.records import Candidate, source_hash

CORPUS = Path(__file__).parent / "corpus"
PATTERNS = sorted(p.stem for p in CORPUS.glob("*.py"))
REPAIRS = 3  # the run configuration's default

# Patterns that run no kernel of ours, and why. Empty: a forward torch.fx cannot trace whole (a
# branch on a tensor's value, `.item()` in Python) is captured in regions around that code.
PYTORCH_ONLY: dict[str, str] = {}


def judged(name: str) -> tuple[Candidate, EvalResult, list[str]]:
    """The final candidate for pattern `name`, its verdict, and the path there (one entry per
    candidate judged: 'first', 'repair', 'reference')."""
    src = (CORPUS / f"{name}.py").read_text()
    task = AuthorTask(problem=problem(src, name), device="cpu")
    cand = author().generate(task)
    result, path, seen = evaluate(src, cand.source, trials=1), ["first"], {source_hash(cand.source)}
    errors = {result.reason}
    for used in range(REPAIRS):
        if result.correct:
            return cand, result, path
        task.current, task.error, task.repairs_left = cand, result.reason, REPAIRS - used
        try:
            cand = author().repair(task)
        except AuthorError:
            break
        if source_hash(cand.source) in seen:  # a repeat moves to the last level, as the repairer does
            break
        seen.add(source_hash(cand.source))
        result = evaluate(src, cand.source, trials=1)
        path.append("repair")
        if not result.correct and result.reason in errors:
            break
        errors.add(result.reason)
    if not result.correct:
        cand = Candidate(source=assemble_verbatim(src, "the reference verbatim"), author="reference")
        result = evaluate(src, cand.source, trials=1)
        path.append("reference")
    return cand, result, path


def test_the_corpus_is_broad_and_mostly_ours() -> None:
    assert len(PATTERNS) >= 30
    assert set(PYTORCH_ONLY) <= set(PATTERNS)
    assert len(PYTORCH_ONLY) * 4 <= len(PATTERNS), "most patterns must run our kernels"
    for name in PATTERNS:
        first = (CORPUS / f"{name}.py").read_text().split("\n", 1)[0]
        assert first.startswith('"""') and first.endswith('"""'), f"{name}: no one-line docstring"


@pytest.mark.parametrize("name", PATTERNS)
def test_pattern_ends_correct_in_our_kernels(name: str) -> None:
    cand, result, path = judged(name)
    assert result.correct, f"{name} ({' -> '.join(path)}): {result.stage}: {result.reason}"
    assert path == ["first"], f"{name}: the first candidate needed {' -> '.join(path)}"
    src = (CORPUS / f"{name}.py").read_text()  # a real run rejects what the allowlist does not know
    failures = run_static_checks(cand.source, fp32_problem=problem_is_fp32(src))
    assert failures == [], "\n".join(f.message for f in failures)
    if name in PYTORCH_ONLY:
        assert result.custom_kernels == 0, f"{name} now runs our kernels: drop it from PYTORCH_ONLY"
    else:
        assert result.custom_kernels > 0, f"{name}: no Triton kernel ran ({cand.note})"


@pytest.mark.slow
def test_optimize_command_on_a_forward_made_constant(tmp_path: Path) -> None:
    # The failure seen on held-out problems: a tensor constant fx makes while tracing must reach ModelNew.
    pat = CORPUS / "tensor_constant_in_forward.py"
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    (tmp_path / "cfg.toml").write_text("[run]\nvariants = 1\ntrials = 2\n")  # subject: the first candidate
    done = subprocess.run([sys.executable, "-c", "import sys; from kernelskill.cli.main import main; "
                           "sys.exit(main())", "optimize", str(pat), "--device", "cpu", "--rounds", "1",
                           "--out", str(tmp_path / "out"), "--config", str(tmp_path / "cfg.toml")],
                          env=env, text=True, capture_output=True, timeout=400)
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    first = report["attempts"][0]
    assert first["outcome"] == "correct" and not report["solution_is_reference"], first
    assert "_tensor_constant" in (tmp_path / "out" / "solution.py").read_text()


def test_a_template_that_fails_to_emit_costs_its_region_not_the_candidate() -> None:
    from kernelskill.authors.builtin.author import BuiltinAuthor
    from kernelskill.authors.builtin.templates.loader import load_templates

    class Broken(type(load_templates()["fused-layer-rms-norm"])):  # type: ignore[misc]
        def emit(self, region, ctx):  # noqa: ANN001, ANN202
            raise KeyError("a template bug")

    templates = dict(load_templates())
    templates["fused-layer-rms-norm"] = Broken()
    src = (CORPUS / "sequential_stack.py").read_text()
    cand = BuiltinAuthor(templates).generate(AuthorTask(problem=problem(src, "stack"), device="cpu"))
    assert "fused-layer-rms-norm" not in cand.author_state.templates
    failures = list(cand.author_state.emit_failures.values())
    assert failures == ["fused-layer-rms-norm: KeyError: 'a template bug'"]
    result = evaluate(src, cand.source, trials=1)
    assert result.correct and result.custom_kernels > 0, result.reason

"""The problem suite: every file loads, runs small on the CPU, and is a usable correctness test.

Small runs check what the evaluator relies on: finite fp32 outputs, a deterministic forward,
inputs left untouched, and outputs that move when the inputs move (a constant output cannot
certify a candidate). Full sizes are checked on the meta device: shapes compose and the
problem fits the memory budget, without allocating anything.
"""

from __future__ import annotations

import ast
import re
import time
from pathlib import Path

import pytest
import torch
from kernelskill.eval.problem import apply_size, check_problem_source, load_problem, small_overrides

PROBLEMS = Path(__file__).resolve().parents[2] / "problems"
FILES = sorted(PROBLEMS.glob("level*/*.py"))
MIN_PER_LEVEL = {"level1": 32, "level2": 22, "level3": 11}
FILE_NAME = re.compile(r"^(\d\d)_[a-z0-9]+(_[a-z0-9]+)*\.py$")
SMALL_SECONDS = 1.0
# Inputs + outputs + parameters at full size; eager intermediates come on top of this.
FULL_BYTES_LIMIT = 12e9


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


def _tensors(obj) -> list[torch.Tensor]:
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for o in obj for t in _tensors(o)]
    if isinstance(obj, dict):
        return [t for o in obj.values() for t in _tensors(o)]
    return []


def _nbytes(obj) -> int:
    return sum(t.numel() * t.element_size() for t in _tensors(obj))


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    # The suite shares a 2-core machine; tiny problems gain nothing from intra-op threads.
    prev = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(prev)


def test_suite_has_every_level_numbered_from_01():
    for level, minimum in MIN_PER_LEVEL.items():
        names = sorted(p.name for p in (PROBLEMS / level).glob("*.py"))
        assert len(names) >= minimum, f"{level} has {len(names)} problems, expected at least {minimum}"
        bad = [n for n in names if not FILE_NAME.match(n)]
        assert not bad, f"{level}: file names must look like 07_layernorm_last_dim.py: {bad}"
        numbers = [int(n[:2]) for n in names]
        assert numbers == list(range(1, len(names) + 1)), f"{level}: numbering has gaps or repeats"


def test_readme_lists_every_problem():
    readme = (PROBLEMS / "README.md").read_text()
    missing = [_id(p) for p in FILES if p.name not in readme]
    assert not missing, f"problems/README.md does not list {missing}"


@pytest.mark.parametrize("path", FILES, ids=_id)
def test_source_format(path: Path):
    source = path.read_text()
    tree = check_problem_source(source, str(path))
    doc = ast.get_docstring(tree)
    assert doc and "\n" not in doc.strip(), "needs a one-line module docstring"
    assert apply_size(source, "full", str(path)) == source
    constants = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name.isupper() and name != "SMALL":
                assert name not in constants, f"{name} is assigned twice at top level"
                try:
                    constants[name] = ast.literal_eval(node.value)
                except ValueError:  # derived from other constants, e.g. HIDDEN = 4 * DIM
                    constants[name] = ast.unparse(node.value)
    small = small_overrides(tree, str(path))
    assert small, "needs a non-empty SMALL dict"
    assert set(small) <= set(constants), f"SMALL names unknown constants: {set(small) - set(constants)}"
    assert any(small[k] != constants[k] for k in small), "SMALL must change at least one constant"
    assert apply_size(source, "small", str(path)) != source


def _run(problem, model, seed: int):
    torch.manual_seed(seed)
    inputs = problem.get_inputs()
    before = [t.clone() for t in _tensors(inputs)]
    start = time.perf_counter()
    with torch.no_grad():
        out = model(*inputs)
    elapsed = time.perf_counter() - start
    for old, new in zip(before, _tensors(inputs), strict=True):
        assert torch.equal(old, new), "forward modified its inputs in place"
    return inputs, out, elapsed


@pytest.mark.parametrize("path", FILES, ids=_id)
def test_small_problem_runs_and_depends_on_inputs(path: Path):
    problem = load_problem(path.read_text(), "small", str(path))
    torch.manual_seed(0)
    model = problem.model_cls(*problem.get_init_inputs())
    inputs, out1, t1 = _run(problem, model, seed=1)
    _, out2, t2 = _run(problem, model, seed=2)

    for x in _tensors(inputs):
        assert x.device.type == "cpu", "get_inputs must create CPU tensors"
        assert not x.is_floating_point() or x.dtype == torch.float32, f"input dtype {x.dtype}"
    for p in model.parameters():
        assert p.dtype == torch.float32, f"parameter dtype {p.dtype}"

    leaves1, leaves2 = _tensors(out1), _tensors(out2)
    assert leaves1, "forward returned no tensor"
    for a, b in zip(leaves1, leaves2, strict=True):
        if a.is_floating_point():
            assert a.dtype == torch.float32, f"output dtype {a.dtype}"
            assert torch.isfinite(a).all() and torch.isfinite(b).all(), "non-finite output"
            scale = float(a.abs().max())
            diff = float((a - b).abs().max()) if a.shape == b.shape else float("inf")
            assert diff > 1e-3 * max(scale, 1e-12), f"output barely moves with the inputs ({diff} vs {scale})"
        else:
            assert a.shape != b.shape or not torch.equal(a, b), "integer output ignores the inputs"

    with torch.no_grad():
        again = model(*inputs)
    for a, b in zip(leaves1, _tensors(again), strict=True):
        assert torch.equal(a, b), "forward is not deterministic"
    assert min(t1, t2) < SMALL_SECONDS, f"small forward took {min(t1, t2):.2f} s"


@pytest.mark.parametrize("path", FILES, ids=_id)
def test_full_size_composes_and_fits(path: Path):
    problem = load_problem(path.read_text(), "full", str(path))
    with torch.device("meta"), torch.no_grad():
        torch.manual_seed(0)
        model = problem.model_cls(*problem.get_init_inputs())
        inputs = problem.get_inputs()
        out = model(*inputs)
    total = _nbytes(inputs) + _nbytes(out) + _nbytes(list(model.parameters()))
    assert _tensors(out), "forward returned no tensor"
    assert total < FULL_BYTES_LIMIT, f"full size needs {total / 1e9:.1f} GB for inputs, outputs, weights"

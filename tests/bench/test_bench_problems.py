"""Bench inputs and records: discovery, levels, categories, filters, results.jsonl, progress lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kernelskill.bench.discovery import DiscoveryError, category_of, discover, select, thread_id
from kernelskill.bench.records import (
    BenchSettings,
    ResultRow,
    append_row,
    error_row,
    read_rows,
    row_from_report,
)
from kernelskill.bench.runner import progress_line

ROOT = Path(__file__).resolve().parents[2]
PROBLEM = (ROOT / "tests" / "fixtures" / "relu_scale.py").read_text()


def make_suite(tmp: Path) -> Path:
    """A KernelBench-like checkout: level folders, numbers not zero-padded, a stray non-problem file."""
    root = tmp / "KernelBench"
    for level, names in (("level1", ["10_ReLU", "2_Softmax", "1_Square_matrix_multiplication_"]),
                         ("level2", ["1_Conv2D_ReLU_BiasAdd"])):
        (root / level).mkdir(parents=True)
        for n in names:
            (root / level / f"{n}.py").write_text(PROBLEM)
    (root / "level1" / "helpers.py").write_text("X = 1\n")
    (root / "level1" / "__init__.py").write_text("")
    (root / "notes").mkdir()
    return root


def test_discover_levels_order_and_skips(tmp_path: Path) -> None:
    warnings: list[str] = []
    root = make_suite(tmp_path)
    got = discover([str(root)], warn=warnings.append)
    assert [p.key for p in got] == ["level1/1_Square_matrix_multiplication_", "level1/2_Softmax",
                                    "level1/10_ReLU", "level2/1_Conv2D_ReLU_BiasAdd"]
    assert len(warnings) == 1 and "helpers.py" in warnings[0] and "not a KernelBench problem" in warnings[0]
    # A level folder itself, a single file, and a file outside any level folder.
    assert [p.key for p in discover([str(root / "level2")])] == ["level2/1_Conv2D_ReLU_BiasAdd"]
    (tmp_path / "mine.py").write_text(PROBLEM)
    assert discover([str(tmp_path / "mine.py")])[0].key == "unknown/mine"
    # Our own suite: a folder of level folders, with a README beside them.
    ours = discover([str(ROOT / "problems")])
    assert len(ours) == len(list((ROOT / "problems").glob("level*/*.py")))
    assert {p.level for p in ours} == {"level1", "level2", "level3"}


def test_discovery_errors_are_one_line(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    for paths, needle in (([str(tmp_path / "nope")], "no such file"),
                          ([str(tmp_path / "empty")], "no problem files"),
                          ([str(ROOT / "README.md")], "expected a problem .py")):
        with pytest.raises(DiscoveryError, match=needle) as e:
            discover(paths)
        assert "\n" not in str(e.value)
    (tmp_path / "bad.py").write_text("X = 1\n")
    with pytest.raises(DiscoveryError, match="not a KernelBench problem"):
        discover([str(tmp_path / "bad.py")])
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        d.mkdir()
        (d / "same.py").write_text(PROBLEM)
    with pytest.raises(DiscoveryError, match="both unknown/same"):
        discover([str(a), str(b)])


def test_filter_globs(tmp_path: Path) -> None:
    problems = discover([str(make_suite(tmp_path))])
    assert [p.name for p in select(problems, ["level1/*"])] == [
        "1_Square_matrix_multiplication_", "2_Softmax", "10_ReLU"]
    assert [p.key for p in select(problems, ["*ReLU*", "2_*"])] == ["level1/2_Softmax", "level1/10_ReLU",
                                                                   "level2/1_Conv2D_ReLU_BiasAdd"]
    assert select(problems, []) == problems
    with pytest.raises(DiscoveryError, match="matches none of the 4 problems"):
        select(problems, ["level9/*"])


@pytest.mark.parametrize(("name", "category"), [
    ("11_gelu", "activation"), ("1_Square_matrix_multiplication_", "gemm"), ("05_matvec", "gemm"),
    ("57_conv_transposed_2D__square_input", "conv-transpose"),
    ("03_convtranspose3d_add_clamp", "conv-transpose"), ("1_Conv2D_ReLU_BiasAdd", "conv"),
    ("12_Gemm_Multiply_LeakyReLU", "gemm"), ("16_layernorm_last_dim", "normalization"),
    ("23_log_softmax", "softmax"), ("41_Max_Pooling_1D", "pooling"), ("95_CrossEntropyLoss", "loss"),
    ("29_cumsum", "scan"), ("27_argmax_dim1", "reduction"), ("88_MinGPTNewGelu", "activation"),
    ("02_resnet_basic_block", "cnn"), ("28_VisionTransformer", "attention"), ("07_gru_stack", "recurrent"),
    ("35_LTSM", "recurrent"), ("01_mlp", "mlp"), ("46_NetVladWithGhostClusters", "other"),
])
def test_category_from_file_name(name: str, category: str) -> None:
    assert category_of(name) == category


def test_thread_ids_are_deterministic_per_bench_and_problem(tmp_path: Path) -> None:
    p, q = discover([str(make_suite(tmp_path))])[:2]
    assert thread_id("ab12cd34", p) == "bench-ab12cd34-level1-1_Square_matrix_multiplication_"
    assert len({thread_id("ab12cd34", p), thread_id("ab12cd34", q), thread_id("ffffffff", p)}) == 3
    a, b = BenchSettings(paths=[], device="cpu", size="small", author="builtin", rounds=1), \
        BenchSettings(paths=[], device="cpu", size="small", author="builtin", rounds=1)
    assert a.bench_id != b.bench_id  # a new bench gets a new id; bench.json keeps it for --resume
    assert BenchSettings.model_validate_json(a.model_dump_json()).bench_id == a.bench_id


REPORT = {
    "rounds": 3, "solution_is_reference": False, "stop_reason": "done",
    "best": {"correct": True, "runtime_ms": 0.5, "eager_ms": 1.0, "compile_ms": 0.75, "speedup_vs_eager": 2.0,
             "speedup_vs_compile": 1.5, "floor_ms": 0.25, "custom_kernels": 2, "timing_is_cpu": False,
             "gpu": "NVIDIA H200", "skill_id": "online-softmax", "templates": ["fuse-elementwise-chain"]},
    "attempts": [{"node": "generator", "skill_id": None}, {"node": "generator", "skill_id": "online-softmax"},
                 {"node": "repairer", "skill_id": "online-softmax"}, {"node": "generator", "skill_id": "x"},
                 {"node": "generator", "skill_id": "online-softmax"}],
}


def test_row_from_report_and_results_file(tmp_path: Path) -> None:
    p = discover([str(make_suite(tmp_path))])[1]
    out = tmp_path / "bench"
    r = row_from_report(p, REPORT, device="cuda", wall_s=12.345, thread_id="t", bench_dir=out,
                        out_dir=out / p.level / p.name, finished_at=1.0)
    assert (r.problem, r.category, r.correct, r.uses_own_kernels) == (
        "level1/2_Softmax", "softmax", True, True)
    assert (r.speedup_vs_eager, r.floor_ms, r.gpu, r.rounds, r.attempts, r.wall_s) == (
        2.0, 0.25, "NVIDIA H200", 3, 5, 12.35)
    assert r.skills_tried == ["online-softmax", "x"] and r.skill_won == "online-softmax"
    assert r.solution == "level1/2_Softmax/solution.py" and r.report == "level1/2_Softmax/report.json"
    ref = row_from_report(p, {**REPORT, "solution_is_reference": True}, device="cuda", wall_s=1,
                          thread_id="t", bench_dir=out, out_dir=out / "x", finished_at=1.0)
    assert not ref.uses_own_kernels and ref.skill_won is None and ref.templates == []
    # results.jsonl: a torn last line (a kill mid-write) is skipped and does not swallow the next row;
    # a later row for the same problem supersedes an earlier (crashed) one.
    out.mkdir()
    append_row(out, error_row(p, "worker died\nmore", device="cuda", wall_s=3, thread_id="t", finished_at=0))
    with open(out / "results.jsonl", "a") as f:
        f.write('{"problem": "level1/torn", "lev')
    append_row(out, r)
    lines = (out / "results.jsonl").read_text().splitlines()
    assert len(lines) == 3 and json.loads(lines[2])["problem"] == "level1/2_Softmax"
    rows = read_rows(out)
    assert rows == [r] and isinstance(rows[0], ResultRow)


def test_progress_lines() -> None:
    base = dict(problem="level1/11_gelu", level="level1", category="activation", path="p", thread_id="t",
                wall_s=41)
    gpu = ResultRow(device="cuda", correct=True, solution_is_reference=False, speedup_vs_eager=1.834,
                    speedup_vs_compile=1.2, **base)
    assert progress_line(12, 88, gpu, "GPU 3", 600) == \
        "[12/88] level1/11_gelu ok 1.83x eager, 1.20x compile (41 s, GPU 3, eta 10 min)"
    cpu = ResultRow(device="cpu", correct=True, **base)
    assert progress_line(3, 3, cpu, "cpu", 0) == "[3/3] level1/11_gelu ok (CPU timing) (41 s, cpu)"
    failed = ResultRow(device="cpu", correct=False, error="worker died", **base)
    assert "ERROR worker died" in progress_line(1, 3, failed, "cpu", 5)

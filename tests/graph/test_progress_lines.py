"""The runner's progress line for a round that judged several variants names each one's result."""

from __future__ import annotations

from kernelskill.graph.runner import describe, variants_said
from kernelskill.state.records import Attempt


def attempt(params: dict, outcome: str = "correct", ms: float | None = 1.0) -> Attempt:
    return Attempt(round=2, node="generator", skill_id="channels-last-layout", params=params,
                   source_hash="h", outcome=outcome, runtime_ms=ms)


def test_one_variant_says_nothing_more() -> None:
    assert variants_said([attempt({})]) == ""
    assert variants_said([]) == ""


def test_each_variant_named_with_its_time_or_outcome() -> None:
    line = variants_said([attempt({"layout": "contiguous"}, ms=3.9248), attempt({}, ms=4.0387),
                          attempt({"layout": "channels_last", "x": 2}, outcome="incorrect", ms=None)])
    assert line == ("; variants: layout=contiguous 3.925 ms | default 4.039 ms | "
                    "layout=channels_last, x=2 incorrect")


def test_reviewer_line_carries_the_variants() -> None:
    from kernelskill.eval.types import EvalResult

    verdict = EvalResult(correct=True, runtime_ms=3.9248, speedup_vs_eager=1.31, custom_kernels=5,
                         timing_is_cpu=False)
    tried = [attempt({"layout": "contiguous"}, ms=3.9248), attempt({}, ms=4.0387)]
    line = describe("reviewer", {"verdict": verdict, "attempts": tried})
    assert line is not None
    assert line.startswith("reviewer: correct, 3.9248 ms, 1.31x vs eager, 5 custom kernels")
    assert line.endswith("; variants: layout=contiguous 3.925 ms | default 4.039 ms")


def test_generator_line_says_which_variants_were_not_judged() -> None:
    from kernelskill.state.records import Candidate

    cand = Candidate(source="x", author="llm", note="applied fuse-elementwise-chain")
    dropped = attempt({"block": 256}, outcome="compile-error", ms=None)
    dropped.error = "skill fuse-elementwise-chain with {'block': 256} generates the code of variant {}"
    line = describe("generator", {"candidate": cand, "attempts": [dropped]})
    assert line == ("generator: applied fuse-elementwise-chain (1 variant not judged: skill "
                    "fuse-elementwise-chain with {'block': 256} generates the code of variant {})")
    alone = describe("generator", {"candidate": cand, "attempts": []})
    assert alone == "generator: applied fuse-elementwise-chain"


def test_profiler_line_says_what_the_profile_cost() -> None:
    from kernelskill.state.records import Profile

    p = Profile(source="gpu", bottleneck="memory-bound", structures=["conv", "elementwise"],
                seconds={"wall": 20.6, "load": 1.2, "timeline": 6.4, "timing": 0.7, "ncu": 9.3})
    assert describe("profiler", {"profile": p}) == (
        "profiler: memory-bound (gpu); conv, elementwise [profiled in 21 s: timeline 6, ncu 9]")
    # The same profile handed back for an unchanged best (a round that did not win) cost nothing.
    assert describe("profiler", {"profile": p}, profile_reused=True) == (
        "profiler: memory-bound (gpu); conv, elementwise [best unchanged: its profile reused]")
    p.seconds = {"wall": 3.0}
    assert describe("profiler", {"profile": p}).endswith("elementwise [profiled in 3 s]")
    p.seconds = {}  # the reviewer's breakdown or a static profile: no child ran
    assert describe("profiler", {"profile": p}) == "profiler: memory-bound (gpu); conv, elementwise"

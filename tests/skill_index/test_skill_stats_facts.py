"""Experience bookkeeping and signature parsing: pure, no embeddings."""

from __future__ import annotations

import json

import pytest
from kernelskill.skill_index import ExperienceStats, load_skills
from kernelskill.skill_index.facts import facts_from_profile, facts_from_text
from kernelskill.skill_index.gating import Policy, gate
from kernelskill.skill_index.ranking import experience_adjustment
from kernelskill.skill_index.stats import Experience
from kernelskill.state.records import Profile

SIG = ("bottleneck: memory-bound; 3.4x over speed of light; DRAM 38% of peak, SM 9%; occupancy 62%\n"
       "structure: elementwise, row-reduction; ops: linear, gelu, mul, layer_norm\n"
       "kernels: 5 launches per forward; top kernel 61% of time (gemm); host gaps 4 us")


def test_record_outcome_counts_tries_wins_and_gain(tmp_path):
    path = tmp_path / "stats.json"
    stats = ExperienceStats(path)
    stats.record_outcome("online-softmax", "row-reduction", "H200", 2.0, True)
    stats.record_outcome("online-softmax", "row-reduction", "H200", 0.5, True)   # correct, slower
    stats.record_outcome("online-softmax", "row-reduction", "H200", 3.0, False)  # fast but wrong
    stats.record_outcome("online-softmax", "row-reduction", "H200", None, True)  # not timed
    rec = ExperienceStats(path).records()[0]  # a fresh reader sees the file
    assert (rec.tries, rec.wins, rec.gains) == (4, 1, 2)
    assert rec.mean_gain == pytest.approx(1.0)  # geometric mean of 2.0 and 0.5
    assert json.loads(path.read_text())["records"][0]["skill_id"] == "online-softmax"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["stats.json", "stats.json.lock"]  # no temp left
    with pytest.raises(ValueError):
        stats.record_outcome("online-softmax", "row_reduction", "H200", 1.1, True)  # not a vocab word


def test_experience_scope_and_adjustment_signs(tmp_path):
    stats = ExperienceStats(tmp_path / "stats.json")
    for _ in range(5):
        stats.record_outcome("a", "gemm", "H200", 0.8, True)
    assert stats.experience("a", ["gemm"]).describe() == "0/5 wins on gemm, mean gain 0.80x [from H200]"
    assert stats.experience("a", ["scan"]).tries == 0
    assert stats.experience("a", ["gemm"], gpu="A100").tries == 0
    assert experience_adjustment(Experience()) == 0.0
    assert experience_adjustment(stats.experience("a", ["gemm"])) < -0.1
    with pytest.raises(ValueError, match="unreadable skill statistics"):
        (tmp_path / "bad.json").write_text("{not json")
        ExperienceStats(tmp_path / "bad.json").records()


def test_signature_text_is_parsed_into_facts():
    f = facts_from_text(SIG)
    assert f.bottleneck == "memory-bound" and f.structures == ("elementwise", "row-reduction")
    assert f.ops == ("linear", "gelu", "mul", "layer_norm")
    assert (f.kernel_count, f.headroom) == (5, 3.4)
    assert "38" not in f.embed_text and "layer_norm" in f.embed_text
    assert f.matched_ops(["layer_norm", "norm", "max"]) == ["layer_norm"]  # whole words only
    static = facts_from_text("bottleneck: memory-bound (static estimate); structure: scan; ops: cumsum")
    assert static.bottleneck == "memory-bound" and static.structures == ("scan",) and static.headroom is None
    free = facts_from_text("softmax over long rows is slow, memory-bound")
    assert free.structures == () and free.bottleneck is None and free.hinted_bottlenecks == ("memory-bound",)


def test_profile_facts_and_unknown_facts_never_gate():
    skills = load_skills()
    profile = Profile(source="static", bottleneck="memory-bound", structures=["scan"], op_kinds=["CumSum"],
                      signature="bottleneck: memory-bound (static estimate); structure: scan; ops: cumsum")
    f = facts_from_profile(profile)
    assert f.ops == ("cumsum",) and f.kernel_count is None and f.headroom is None
    assert gate(skills["single-pass-block-scan"], f, Policy()) is None
    assert "needs structure conv" in gate(skills["conv-implicit-gemm"], f, Policy())
    assert gate(skills["cuda-graph-replay"], f, Policy()) is None  # launch count unknown: kept
    free = facts_from_text("anything at all")
    assert gate(skills["conv-implicit-gemm"], free, Policy()) is None
    assert gate(skills["gemm-tf32-tensor-cores"], free, Policy()).startswith("needs the tf32 precision")
    assert gate(skills["fold-batchnorm-into-conv"], free, Policy(training=False)) is None

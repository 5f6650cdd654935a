"""Retrieval quality, gating, exclusion and experience re-ranking on the real library."""

from __future__ import annotations

from pathlib import Path

from kernelskill.skill_index import SkillIndex, default_skills_dir
from kernelskill.state.records import Profile
from kernelskill.state.vocab import BOTTLENECKS, STRUCTURES
from skill_cases import CASES

MIN_HIT_RATE = 0.90


def test_case_table_spans_the_vocabulary():
    assert len(CASES) >= 24
    text = "\n".join(c.signature for c in CASES)
    assert all(f"bottleneck: {b}" in text for b in BOTTLENECKS)
    assert all(s in text for s in STRUCTURES)


def test_top3_hit_rate_on_the_signature_table(index: SkillIndex):
    misses = []
    for case in CASES:
        top = [h.id for h in index.query(case.signature, k=3, allow_tf32=case.allow_tf32,
                                         training=case.training)]
        if not set(case.want) & set(top):
            misses.append(f"want {case.want} got {top} for {case.signature.splitlines()[0]!r}")
    rate = 1 - len(misses) / len(CASES)
    print(f"\ntop-3 hit rate {rate:.1%} ({len(CASES) - len(misses)}/{len(CASES)})")
    for miss in misses:
        print("  MISS", miss)
    assert rate >= MIN_HIT_RATE, misses


def test_hits_carry_score_reason_and_skill(index: SkillIndex):
    hits = index.query(CASES[0].signature, k=3)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    top = hits[0]
    assert top.skill.id == top.id and top.title == top.skill.title
    assert "similar trigger" in top.reason and "structure elementwise present" in top.reason
    assert "no history" in top.reason


def _gemm_profile(bottleneck: str = "compute-bound") -> Profile:
    return Profile(source="gpu", bottleneck=bottleneck, structures=["gemm"], op_kinds=["matmul"],
                   kernel_count=1, headroom=1.3,
                   signature=f"bottleneck: {bottleneck}; 1.3x over speed of light; DRAM 20% of peak, SM 76%\n"
                             "structure: gemm; ops: matmul\nkernels: 1 launches per forward")


def test_tf32_only_skill_is_gated_by_the_precision_policy(index: SkillIndex):
    n = len(index.skills)
    strict = {h.id for h in index.query(_gemm_profile(), k=n)}
    relaxed = {h.id for h in index.query(_gemm_profile(), k=n, allow_tf32=True)}
    assert "gemm-tf32-tensor-cores" not in strict
    assert "gemm-tf32x3-strict-fp32" in strict
    assert "gemm-tf32-tensor-cores" in relaxed
    assert "gemm-tf32x3-strict-fp32" not in relaxed
    assert index.query(_gemm_profile(), k=1, allow_tf32=True)[0].id == "gemm-tf32-tensor-cores"
    # the Profile's typed fields gate too: no conv, scan or recurrent skill for a pure GEMM
    assert not {"conv-implicit-gemm", "single-pass-block-scan", "rnn-fused-gates"} & strict
    # ...and a memory-bound GEMM gets no TF32 skill even when TF32 is allowed
    memory = {h.id for h in index.query(_gemm_profile("memory-bound"), k=n, allow_tf32=True)}
    assert "gemm-tf32-tensor-cores" not in memory


def test_training_mode_gates_batchnorm_folding(index: SkillIndex):
    sig = ("bottleneck: memory-bound; 2.0x over speed of light\nstructure: conv, normalization; "
           "ops: conv2d, batch_norm, relu\nkernels: 3 launches per forward")
    n = len(index.skills)
    assert "fold-batchnorm-into-conv" not in {h.id for h in index.query(sig, k=n, training=True)}
    assert "fold-batchnorm-into-conv" in {h.id for h in index.query(sig, k=n, training=False)}


def test_free_text_gates_nothing_but_policy(index: SkillIndex):
    n = len(index.skills)
    ids = {h.id for h in index.query("softmax over long rows is slow", k=n)}
    assert "conv-transpose-gather" in ids  # no structure is known, so none is required
    assert "gemm-tf32-tensor-cores" not in ids  # the policy always applies
    assert all(index.skills[i].kind == "technique" for i in ids)


def test_exclude_removes_ids_and_guardrails_only_on_request(index: SkillIndex):
    sig = CASES[0].signature
    first = index.query(sig, k=3)[0].id
    assert first not in {h.id for h in index.query(sig, k=10, exclude=[first])}
    with_guards = index.query(sig, k=len(index.skills), include_guardrails=True)
    assert any(h.skill.kind == "guardrail" for h in with_guards)
    guards = {s.id for s in index.guardrails(allow_tf32=False, training=True)}
    assert "guard-no-tf32-on-fp32" in guards and "guard-no-bn-folding-in-training" in guards
    relaxed = {s.id for s in index.guardrails(allow_tf32=True, training=False)}
    assert "guard-no-tf32-on-fp32" not in relaxed and "guard-no-bn-folding-in-training" not in relaxed
    assert "guard-no-output-caching" in relaxed


def test_experience_reranks_as_designed(index_dir: Path, tmp_path: Path):
    idx = SkillIndex(default_skills_dir(), index_dir, tmp_path / "stats.json")  # same vectors, own stats
    sig = CASES[7].signature  # few huge layer-norm rows
    before = [h.id for h in idx.query(sig, k=5)]
    a, b = before[0], before[2]
    for _ in range(5):
        idx.record_outcome(a, "normalization", "H200", speedup=0.7, correct=True)
        idx.record_outcome(b, "normalization", "H200", speedup=1.6, correct=True)
    after = idx.query(sig, k=5)
    order = [h.id for h in after]
    assert order.index(b) < order.index(a)
    hit_b = next(h for h in after if h.id == b)
    assert "5/5 wins on normalization" in hit_b.reason and "mean gain 1.60x" in hit_b.reason
    # history on another GPU or structure does not leak into this query's scope
    scoped = SkillIndex(default_skills_dir(), index_dir, tmp_path / "stats.json")
    other = [h.id for h in scoped.query(sig, k=5, gpu="A100")]
    assert other == before


def test_untried_skill_keeps_its_similarity_rank(index_dir: Path, tmp_path: Path):
    idx = SkillIndex(default_skills_dir(), index_dir, tmp_path / "stats.json")
    sig = CASES[6].signature
    before = [h.id for h in idx.query(sig, k=5)]
    idx.record_outcome("conv3d-implicit-gemm", "conv", "H200", speedup=3.0, correct=True)  # unrelated
    assert [h.id for h in idx.query(sig, k=5)] == before

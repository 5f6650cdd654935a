"""Incremental rebuild: only skills whose trigger text changed are re-embedded."""

from __future__ import annotations

import shutil

from kernelskill.skill_index import SkillIndex
from kernelskill.skill_index.embedding import CountingEmbedder, MiniLMEmbedder

IDS = ("online-softmax", "single-pass-block-scan", "cuda-graph-replay", "fused-pooling-window")


def test_sync_embeds_only_what_changed(skill_copy, tmp_path):
    root = skill_copy(*IDS)
    persist, stats = tmp_path / "index", tmp_path / "stats.json"
    counter = CountingEmbedder(MiniLMEmbedder())

    def sync():
        return SkillIndex(root, persist, stats, embedder=counter).sync()

    first = sync()
    assert sorted(first.added) == sorted(IDS) and counter.count == len(IDS)

    again = sync()  # a new index over the same persist dir: everything is up to date
    assert again.embedded == 0 and counter.count == len(IDS)

    body_only = root / "single-pass-block-scan" / "SKILL.md"
    body_only.write_text(body_only.read_text().replace("## Pitfalls", "## Pitfalls\n- An extra note.", 1))
    assert sync().embedded == 0  # the body is not embedded

    changed = root / "online-softmax" / "SKILL.md"
    changed.write_text(changed.read_text().replace("A softmax or log_softmax", "A softmax", 1))
    report = sync()
    assert report.updated == ["online-softmax"] and report.added == [] and report.embedded == 1
    assert counter.count == len(IDS) + 1

    shutil.rmtree(root / "cuda-graph-replay")
    report = sync()
    assert report.removed == ["cuda-graph-replay"] and report.embedded == 0

    idx = SkillIndex(root, persist, stats, embedder=counter)
    ids = [h.id for h in idx.query("softmax over long rows", k=10)]
    assert "cuda-graph-replay" not in ids and set(ids) == set(IDS) - {"cuda-graph-replay"}
    assert counter.count == len(IDS) + 2  # + the query itself

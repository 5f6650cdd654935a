"""The skill library as data: every SKILL.md validates, and malformed ones fail in one line."""

from __future__ import annotations

from pathlib import Path

import pytest
from kernelskill.skill_index import SkillError, default_skills_dir, load_skill, load_skills
from kernelskill.state.vocab import BOTTLENECKS, STRUCTURES


def test_every_repo_skill_loads_and_validates():
    skills = load_skills()
    techniques = [s for s in skills.values() if s.kind == "technique"]
    assert len(skills) >= 44 and len(techniques) >= 40
    assert {s.id for s in skills.values()} == {p.name for p in default_skills_dir().iterdir() if p.is_dir()}
    covered_structures = {x for s in techniques for x in s.structures}
    covered_bottlenecks = {x for s in techniques for x in s.bottlenecks}
    assert covered_structures == set(STRUCTURES)
    assert covered_bottlenecks == set(BOTTLENECKS)
    for s in skills.values():
        for other in s.conflicts:  # conflicts are declared on both sides
            assert s.id in skills[other].conflicts, (s.id, other)


def test_guardrails_are_marked_and_policy_gated():
    skills = load_skills()
    guards = {s.id for s in skills.values() if s.kind == "guardrail"}
    assert {"guard-no-tf32-on-fp32", "guard-no-bn-folding-in-training", "guard-no-output-caching",
            "guard-no-side-streams"} <= guards
    assert skills["guard-no-tf32-on-fp32"].preconditions.strict_fp32_only
    assert skills["guard-no-bn-folding-in-training"].preconditions.training_only
    assert skills["gemm-tf32-tensor-cores"].preconditions.needs_tf32_policy
    assert skills["fold-batchnorm-into-conv"].preconditions.inference_only


GOOD = (default_skills_dir() / "online-softmax" / "SKILL.md").read_text()


def _write(root: Path, folder: str, text: str) -> Path:
    (root / folder).mkdir(parents=True)
    path = root / folder / "SKILL.md"
    path.write_text(text)
    return path


@pytest.mark.parametrize(("folder", "mutate", "field", "detail"), [
    ("online-softmax", lambda t: t.replace("title: ", "title: [unclosed", 1), "front matter", "invalid YAML"),
    ("online-softmax", lambda t: t.replace("triggers: >-", "triggerz: >-", 1), "triggers", "missing"),
    ("online-softmax", lambda t: t.replace("structures: [row-reduction", "structures: [row_reduction", 1),
     "structures", "'row_reduction' is not one of elementwise, row-reduction,"),
    ("softmax-online", lambda t: t, "id", "does not match folder name 'softmax-online'"),
    ("online-softmax", lambda t: t.replace("bottlenecks: [memory-bound", "bottlenecks: [memory_bound", 1),
     "bottlenecks", "'memory_bound' is not one of"),
    ("online-softmax", lambda t: t.replace("preconditions:\n", "preconditions:\n  needs_gpu: true\n", 1),
     "preconditions.needs_gpu", "unknown key"),
    ("online-softmax", lambda t: t.replace("## Pitfalls", "## Caveats", 1), "body", "'## Pitfalls'"),
])
def test_malformed_skill_gives_one_line_error_naming_file_and_field(tmp_path, folder, mutate, field, detail):
    path = _write(tmp_path, folder, mutate(GOOD))
    with pytest.raises(SkillError) as err:
        load_skill(path)
    msg = str(err.value)
    assert "\n" not in msg
    assert f"{folder}/SKILL.md: field '{field}'" in msg
    assert detail in msg


def test_unknown_conflict_id_is_reported_by_the_library(tmp_path):
    _write(tmp_path, "online-softmax", GOOD.replace("conflicts: []", "conflicts: [no-such-skill]", 1))
    with pytest.raises(SkillError, match=r"online-softmax/SKILL.md: field 'conflicts': unknown skill id"):
        load_skills(tmp_path)

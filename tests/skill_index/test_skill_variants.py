"""Skills as moves: a template skill's variants are data in its SKILL.md, each a few parameters its
template reads (declared in the template's `params`); a malformed list fails in one line."""

from __future__ import annotations

from pathlib import Path

import pytest
from kernelskill.authors.builtin.templates.loader import load_templates
from kernelskill.skill_index import SkillError, default_skills_dir, load_skill, load_skills


def test_declared_variants_use_parameters_their_template_reads() -> None:
    skills, templates = load_skills(), load_templates()
    with_variants = [s for s in skills.values() if s.variants]
    assert len(with_variants) >= 20
    for s in with_variants:
        assert s.id in templates, f"{s.id}: variants without a template to read them"
        for v in s.variants:
            assert set(v) <= set(templates[s.id].params), (s.id, v, sorted(templates[s.id].params))
        assert s.all_variants()[0] == {}  # the default comes first
    # A template without tunables has its one default variant.
    assert skills["cuda-graph-replay"].all_variants() == [{}]


GOOD = (default_skills_dir() / "split-row-reduction" / "SKILL.md").read_text()


@pytest.mark.parametrize(("variants", "message"), [
    ("  - {chunk: 8192}\n  - {chunk: 8192}\n", "variant 1 repeats an earlier one"),
    ("  - {}\n", "variant 0 is empty"),
    ("  - 8192\n", "valid dictionary"),
])
def test_a_malformed_variant_list_fails_in_one_line(tmp_path: Path, variants: str, message: str) -> None:
    head, rest = GOOD.split("\nvariants:\n", 1)
    body = rest[rest.index("\n---"):]
    folder = tmp_path / "split-row-reduction"
    folder.mkdir()
    (folder / "SKILL.md").write_text(f"{head}\nvariants:\n{variants.rstrip()}{body}")
    with pytest.raises(SkillError, match=message) as err:
        load_skill(folder / "SKILL.md")
    assert "field 'variants" in str(err.value) and "\n" not in str(err.value)

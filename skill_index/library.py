"""Load and validate skills/<id>/SKILL.md files; every problem becomes a one-line SkillError."""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import ValidationError

from .schema import REQUIRED_SECTIONS, Skill, SkillError, SkillMeta

SKILL_FILE = "SKILL.md"
# libyaml's C parser when PyYAML was built with it: the same documents, 9x faster (64 front
# matters: 0.22 s -> 0.025 s), which every `kernelskill skills` command pays on start-up.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def default_skills_dir() -> Path:
    """The repository's skills/ folder, found from the package location (the repo root IS the package)."""
    return Path(__file__).resolve().parent.parent / "skills"


def _display(path: Path) -> str:
    """The path as the user can open it: relative when under the working directory, else absolute."""
    path = path.absolute()
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _split(text: str, where: str) -> tuple[str, str]:
    if not text.startswith("---"):
        raise SkillError(f"{where}: field 'front matter': file must start with a '---' YAML block")
    parts = text.split("\n---", 1)
    if len(parts) != 2:
        raise SkillError(f"{where}: field 'front matter': no closing '---' line")
    head = parts[0][3:]
    body = parts[1].split("\n", 1)[1] if "\n" in parts[1] else ""
    return head, body.strip() + "\n"


def _validation_message(err: ValidationError) -> tuple[str, str]:
    first = err.errors()[0]
    field = ".".join(str(p) for p in first["loc"]) or "front matter"
    msg = first["msg"].removeprefix("Value error, ")
    if first["type"] == "missing":
        msg = "missing"
    elif first["type"] == "extra_forbidden":
        msg = "unknown key (see skill_index/README.md for the schema)"
    return field, _one_line(msg)


def load_skill(path: Path) -> Skill:
    """Parse one SKILL.md; the folder name must equal the id."""
    where = _display(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SkillError(f"{where}: field 'file': cannot read ({exc.strerror})") from None
    head, body = _split(text, where)
    try:
        data = yaml.load(head, Loader=_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        msg = f"invalid YAML ({line}{_one_line(problem)})"
        raise SkillError(f"{where}: field 'front matter': {msg}") from None
    if not isinstance(data, dict):
        raise SkillError(f"{where}: field 'front matter': expected a YAML mapping")
    try:
        meta = SkillMeta.model_validate(data)
    except ValidationError as exc:
        field, msg = _validation_message(exc)
        raise SkillError(f"{where}: field '{field}': {msg}") from None
    if meta.id != path.parent.name:
        raise SkillError(f"{where}: field 'id': {meta.id!r} does not match folder name {path.parent.name!r}")
    for section in REQUIRED_SECTIONS:
        if not any(line.strip() == section for line in body.splitlines()):
            raise SkillError(f"{where}: field 'body': missing section '{section}'")
    return Skill(**meta.model_dump(), body=body, path=path)


def load_skills(skills_dir: Path | None = None) -> dict[str, Skill]:
    """All skills of a folder by id, sorted; cross-references (conflicts) must name existing skills."""
    skills_dir = skills_dir or default_skills_dir()
    if not skills_dir.is_dir():
        raise SkillError(f"{_display(skills_dir)}: field 'skills_dir': not a folder")
    skills: dict[str, Skill] = {}
    for path in sorted(skills_dir.glob(f"*/{SKILL_FILE}")):
        skill = load_skill(path)
        skills[skill.id] = skill
    for skill in skills.values():
        where = _display(skill.path)
        for other in skill.conflicts:
            if other not in skills:
                raise SkillError(f"{where}: field 'conflicts': unknown skill id {other!r}")
            if other == skill.id:
                raise SkillError(f"{where}: field 'conflicts': a skill cannot conflict with itself")
    return skills

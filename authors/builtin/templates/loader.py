"""Discovering executable skill templates: skills/<id>/template.py defining TEMPLATE."""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path

from .base import Template


def skills_dir() -> Path:
    return Path(__file__).resolve().parents[3] / "skills"


class TemplateLoadError(Exception):
    """A template.py is broken: one line naming the file."""


@cache
def load_templates(root: str | None = None) -> dict[str, Template]:
    """Skill id -> template instance, for every skills/<id>/template.py."""
    base = Path(root) if root else skills_dir()
    found: dict[str, Template] = {}
    for path in sorted(base.glob("*/template.py")):
        skill_id = path.parent.name
        spec = importlib.util.spec_from_file_location(f"kernelskill_template_{skill_id.replace('-', '_')}",
                                                      path)
        if spec is None or spec.loader is None:
            raise TemplateLoadError(f"{path}: cannot be imported")
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Exception as e:
            raise TemplateLoadError(f"{path}: import failed: {type(e).__name__}: {e}") from None
        tpl = getattr(module, "TEMPLATE", None)
        if not isinstance(tpl, Template):
            raise TemplateLoadError(f"{path}: defines no TEMPLATE = <Template subclass instance>")
        tpl.id = skill_id
        found[skill_id] = tpl
    return found

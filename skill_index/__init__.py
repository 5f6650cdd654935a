"""Long-term memory: the skill library (skills/), its Chroma index, gating and experience stats.

Importing this package is cheap: chromadb and sentence-transformers load on the first query.
"""

from .index import SkillHit, SkillIndex
from .library import default_skills_dir, load_skill, load_skills
from .schema import Preconditions, Skill, SkillError, SkillMeta
from .stats import Experience, ExperienceStats, StatRecord

__all__ = [
    "Experience", "ExperienceStats", "Preconditions", "Skill", "SkillError", "SkillHit", "SkillIndex",
    "SkillMeta", "StatRecord", "default_skills_dir", "load_skill", "load_skills",
]

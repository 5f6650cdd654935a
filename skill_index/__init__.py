"""Long-term memory: the skill library (skills/), its Chroma index, gating and experience stats.

Importing this package is cheap: numpy and the embedding model load on the first query, chromadb
only when the skills changed since the last sync (skill_index/store.py).
"""

from .index import SkillHit, SkillIndex
from .library import default_skills_dir, load_skill, load_skills
from .schema import Preconditions, Skill, SkillError, SkillMeta
from .stats import Experience, ExperienceStats, StatRecord

__all__ = [
    "Experience", "ExperienceStats", "Preconditions", "Skill", "SkillError", "SkillHit", "SkillIndex",
    "SkillMeta", "StatRecord", "default_skills_dir", "load_skill", "load_skills",
]

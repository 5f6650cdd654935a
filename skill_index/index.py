"""SkillIndex: the long-term memory's one entry point — load, sync, gate, rank, learn.

    index = SkillIndex()
    hits = index.query(profile, k=3, exclude=failed_ids, allow_tf32=False, training=True)
    index.record_outcome(hits[0].id, "row-reduction", "H200", speedup=1.4, correct=True)
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from .embedding import Embedder, MiniLMEmbedder, MiniLMQueryEmbedder
from .facts import QueryFacts, query_facts
from .gating import Policy, gate
from .library import default_skills_dir, load_skills
from .query_cache import CACHE_FILE, CachedEmbedder
from .ranking import known_loser, score, variant_order
from .schema import Skill, SkillError, variant_key
from .stats import StatRecord
from .stats_sql import open_stats
from .store import SkillStore, SyncReport

if TYPE_CHECKING:
    from ..state.records import Profile

_WORDS_RE = re.compile(r"[a-z0-9][a-z0-9-]+")
_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+")


def cache_home() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kernelskill"


class SkillHit(BaseModel):
    """One ranked skill: what the planner sees and the CLI prints."""

    id: str
    title: str
    score: float
    similarity: float
    reason: str
    skill: Skill


def _closest_sentence(triggers: str, query: str) -> str:
    """The trigger sentence sharing most words with the query: shows *why* the text matched."""
    words = set(_WORDS_RE.findall(query.lower()))
    sentences = _SENTENCE_RE.split(triggers)
    best = max(sentences, key=lambda s: len(words & set(_WORDS_RE.findall(s.lower()))))
    return best if len(best) <= 90 else best[:87] + "..."


class SkillIndex:
    """Skills from `skills_dir`, embedded into Chroma at `persist_dir`, re-ranked by `stats_path`."""

    def __init__(self, skills_dir: Path | None = None, persist_dir: Path | None = None,
                 stats_path: Path | None = None, *, embedder: Embedder | None = None,
                 state_db: str | None = None) -> None:
        self.skills_dir = skills_dir or default_skills_dir()
        self.persist_dir = persist_dir or cache_home() / "skill_index"
        # A PostgreSQL state database holds the statistics for every host; else the JSON file.
        self.stats = open_stats(stats_path or cache_home() / "skill_stats.json", state_db)
        self.embedder = embedder or MiniLMEmbedder()
        # Queries repeat (the same profile signature on every resume, bench rerun or CLI search):
        # their vectors are cached beside the collection, so a repeat never loads the model. A new
        # one is embedded by the numpy forward of the same model, which imports no torch (~6 s).
        inner = MiniLMQueryEmbedder() if embedder is None else embedder
        self.query_embedder = CachedEmbedder(inner, self.persist_dir / CACHE_FILE)
        self.skills: dict[str, Skill] = load_skills(self.skills_dir)
        self._store: SkillStore | None = None
        self.last_sync: SyncReport | None = None

    def get(self, skill_id: str) -> Skill:
        try:
            return self.skills[skill_id]
        except KeyError:
            raise SkillError(f"unknown skill id {skill_id!r}; `kernelskill skills list` shows the ids"
                             ) from None

    def sync(self) -> SyncReport:
        """Bring the Chroma collection in line with skills/: embed new or changed, drop removed."""
        if self._store is None:
            self._store = SkillStore(self.persist_dir, self.embedder)
        self.last_sync = self._store.sync(self.skills)
        return self.last_sync

    def guardrails(self, *, allow_tf32: bool = False, training: bool = True) -> list[Skill]:
        """Guardrail skills that apply under this policy: the planner puts them in every prompt."""
        facts, policy = QueryFacts(text=""), Policy(allow_tf32, training)
        return [s for s in self.skills.values() if s.kind == "guardrail" and gate(s, facts, policy) is None]

    def query(self, signature: str | Profile, k: int = 5, *, exclude: Iterable[str] = (),
              allow_tf32: bool = False, training: bool = True, gpu: str | None = None,
              include_guardrails: bool = False) -> list[SkillHit]:
        """The k best technique skills for a profile (or its signature, or free text), best first.

        Hard preconditions gate first; `exclude` drops ids (skills that already failed on this
        task); the rest are ranked by `ranking.score`. Guardrails are left out unless asked for:
        they match every profile and would crowd the techniques out of the top k.
        """
        if self._store is None or self.last_sync is None:
            self.sync()
        assert self._store is not None
        facts = query_facts(signature)
        policy = Policy(allow_tf32=allow_tf32, training=training)
        excluded = set(exclude)
        sims = self._store.similarities(facts.embed_text, self.query_embedder)
        structures = facts.bonus_structures
        hits: list[SkillHit] = []
        for sid, sim in sims.items():
            skill = self.skills.get(sid)
            if skill is None or sid in excluded or (skill.kind == "guardrail" and not include_guardrails):
                continue
            if gate(skill, facts, policy) is not None:
                continue
            s_match = sorted(set(skill.structures) & set(structures))
            b_match = sorted(set(skill.bottlenecks) & set(facts.bonus_bottlenecks))
            o_match = facts.matched_ops(skill.ops)
            unlocked = ((skill.preconditions.needs_tf32_policy and allow_tf32)
                        or (skill.preconditions.inference_only and not training))
            exp = self.stats.experience(sid, s_match or structures, gpu)
            reason = [f"similar trigger ({sim:.2f}): '{_closest_sentence(skill.triggers, facts.text)}'"]
            if s_match:
                reason.append(f"structure {', '.join(s_match)} present")
            if b_match:
                reason.append(f"bottleneck {b_match[0]} matches")
            if o_match:
                reason.append(f"op {', '.join(o_match)} named")
            if unlocked:
                reason.append("unlocked by the run's policy")
            reason.append(exp.describe())
            total = score(sim, bool(s_match), bool(b_match), bool(o_match), unlocked, exp)
            hits.append(SkillHit(id=sid, title=skill.title, score=round(total, 4), similarity=round(sim, 4),
                                 reason="; ".join(reason), skill=skill))
        hits.sort(key=lambda h: (-h.score, h.id))
        return hits[:k]

    def gated_out(self, signature: str | Profile, *, allow_tf32: bool = False,
                  training: bool = True) -> dict[str, str]:
        """Skill id -> why its preconditions failed for this query (diagnostics for the log)."""
        facts, policy = query_facts(signature), Policy(allow_tf32, training)
        out = {sid: gate(s, facts, policy) for sid, s in self.skills.items()}
        return {sid: why for sid, why in out.items() if why is not None}

    def allowed(self, *, allow_tf32: bool = False, training: bool = True) -> list[Skill]:
        """Technique skills the run's policy permits, whatever the profile says (the planner's last
        fallback: any template the author can apply)."""
        facts, policy = QueryFacts(text=""), Policy(allow_tf32, training)
        return [s for s in self.skills.values() if s.kind == "technique" and gate(s, facts, policy) is None]

    def variants(self, skill_id: str, structures: Iterable[str] = (), gpu: str | None = None
                 ) -> list[dict[str, Any]]:
        """The skill's variants (default first when untried), ordered by their experience on these
        structures and this GPU (ranking.variant_order)."""
        skill = self.skills.get(skill_id)
        found = skill.all_variants() if skill is not None else [{}]
        wanted = list(structures)
        return variant_order(found, lambda v: self.stats.experience(skill_id, wanted, gpu, variant_key(v)))

    def known_loser(self, skill_id: str, params: dict[str, Any], structures: Iterable[str] = (),
                    gpu: str | None = None) -> bool:
        """Whether the skill's variant lost by a wide margin every time it ran here, or the same
        parameters did under other skills (ranking.known_loser): a round tries it last."""
        if not params or gpu is None:  # the default is the skill itself; a CPU run has no timings
            return False
        wanted, key = list(structures), variant_key(params)
        return known_loser(self.stats.experience(skill_id, wanted, gpu, key),
                           self.stats.experience(None, wanted, gpu, key))

    def record_outcome(self, skill_id: str, structure: str, gpu: str, speedup: float | None,
                       correct: bool, variant: dict[str, Any] | None = None) -> StatRecord:
        """Learn from one finished attempt (see stats.ExperienceStats.record_outcome)."""
        self.get(skill_id)
        return self.stats.record_outcome(skill_id, structure, gpu, speedup, correct,
                                         variant_key(variant or {}))

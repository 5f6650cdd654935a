"""What a query knows for sure: typed facts from a Profile, or what a signature text states.

A `Profile` gives its typed fields. A text is parsed leniently: the profiler's signature lines
(`bottleneck: ...`, `structure: ...; ops: ...`, `N launches`, `Nx over speed of light`) become
facts; free text ("softmax over long rows is slow") yields none, so no hard gate can fire on a
guess. Vocabulary words found anywhere in free text are kept as *hints* for the soft bonus only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..state.vocab import BOTTLENECKS, STRUCTURES

if TYPE_CHECKING:  # state.records builds six pydantic models: `skills search` with text needs none
    from ..state.records import Profile

_BOTTLENECK_RE = re.compile(r"bottleneck:\s*([a-z-]+)")
_STRUCTURE_RE = re.compile(r"structures?:\s*([^;\n]*)")
_OPS_RE = re.compile(r"\bops:\s*([^;\n]*)")
_LAUNCHES_RE = re.compile(r"(\d+)\s+launch(?:es)?\b")
_HEADROOM_RE = re.compile(r"(\d+(?:\.\d+)?)x\s+over\s+speed\s+of\s+light")
_WORD_RE = re.compile(r"[a-z][a-z-]*[a-z]")
# Numbers carry no meaning for a sentence embedder ("38% of peak" reads like any other number), and
# the profiler's fixed phrasing is shared by every signature: both only blur the similarity.
_NOISE_RE = re.compile(r"\b\d+(?:\.\d+)?\s*(?:%|x\b|us\b|ms\b|b\b)?|"
                       r"over speed of light|of peak|per forward|of time|kernels:|"
                       r"top kernel|bottleneck:|structure:|ops:")


@dataclass(frozen=True)
class QueryFacts:
    """Facts used by the gates (None / empty = unknown) and vocabulary hints used by the bonus."""

    text: str
    bottleneck: str | None = None
    structures: tuple[str, ...] = ()
    ops: tuple[str, ...] = ()
    kernel_count: int | None = None
    headroom: float | None = None
    hinted_structures: tuple[str, ...] = field(default=())
    hinted_bottlenecks: tuple[str, ...] = field(default=())

    @property
    def embed_text(self) -> str:
        """The query as embedded: the signature without numbers and fixed profiler phrasing."""
        cleaned = " ".join(_NOISE_RE.sub(" ", self.text.lower()).split())
        return cleaned or self.text

    def matched_ops(self, ops: list[str]) -> list[str]:
        """Skill ops named in the query as whole words ('max' does not match 'max_pool2d')."""
        low = self.text.lower() + " " + " ".join(self.ops)
        return [op for op in ops if re.search(rf"(?<![a-z0-9_]){re.escape(op)}(?![a-z_])", low)]

    @property
    def bonus_structures(self) -> tuple[str, ...]:
        return self.structures or self.hinted_structures

    @property
    def bonus_bottlenecks(self) -> tuple[str, ...]:
        return (self.bottleneck,) if self.bottleneck else self.hinted_bottlenecks


def facts_from_profile(profile: Profile) -> QueryFacts:
    fallback = f"bottleneck: {profile.bottleneck}; structure: {', '.join(profile.structures)}"
    return QueryFacts(
        text=profile.signature or fallback,
        bottleneck=profile.bottleneck,
        structures=tuple(profile.structures),
        ops=tuple(o.lower() for o in profile.op_kinds),
        kernel_count=profile.kernel_count or None,
        headroom=profile.headroom,
    )


def facts_from_text(text: str) -> QueryFacts:
    low = text.lower()
    bottleneck = None
    if (m := _BOTTLENECK_RE.search(low)) and m.group(1) in BOTTLENECKS:
        bottleneck = m.group(1)
    structures: tuple[str, ...] = ()
    if m := _STRUCTURE_RE.search(low):
        structures = tuple(s.strip() for s in m.group(1).split(",") if s.strip() in STRUCTURES)
    ops: tuple[str, ...] = ()
    if m := _OPS_RE.search(low):
        ops = tuple(o.strip() for o in m.group(1).split(",") if o.strip())
    kernel_count = int(m.group(1)) if (m := _LAUNCHES_RE.search(low)) else None
    headroom = float(m.group(1)) if (m := _HEADROOM_RE.search(low)) else None
    words = set(_WORD_RE.findall(low))
    return QueryFacts(
        text=text, bottleneck=bottleneck, structures=structures, ops=ops,
        kernel_count=kernel_count, headroom=headroom,
        hinted_structures=tuple(s for s in STRUCTURES if s in words),
        hinted_bottlenecks=tuple(b for b in BOTTLENECKS if b in words),
    )


def query_facts(query: str | Profile) -> QueryFacts:
    return facts_from_text(query) if isinstance(query, str) else facts_from_profile(query)

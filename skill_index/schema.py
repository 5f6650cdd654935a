"""The SKILL.md front matter as pydantic records, and the one error a malformed skill raises.

Vocabulary fields are typed with the shared `Structure` / `Bottleneck` literals, but checked by
hand first so the message lists the allowed words instead of pydantic's long union dump.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..state.vocab import BOTTLENECKS, STRUCTURES, Bottleneck, Structure

ID_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
# A sentence ends at . ! or ? followed by whitespace or the end; "1.5x" and "e.g.x" do not split.
SENTENCE_END_RE = re.compile(r"[.!?](?:\s|$)")
REQUIRED_SECTIONS = ("## When", "## How", "## Pitfalls", "## How to verify")

Scalar = int | float | str | bool


def variant_key(params: dict[str, Any]) -> str:
    """A variant's identity in statistics and logs: its parameters as canonical JSON ('{}': default)."""
    return json.dumps(params, sort_keys=True, separators=(",", ":"), default=str)


class SkillError(Exception):
    """The library or its index is unusable; one line, for a file '<file>: field '<name>': <what>'."""


def _check_words(values: object, allowed: tuple[str, ...]) -> object:
    if isinstance(values, list):
        for value in values:
            if value not in allowed:
                raise ValueError(f"{value!r} is not one of {', '.join(allowed)}")
    return values


class Preconditions(BaseModel):
    """Hard gates. A fact the query does not know (free text, CPU profile) never blocks a skill."""

    model_config = ConfigDict(extra="forbid")

    structures_any: list[Structure] = Field(
        default_factory=list, description="At least one of these structures is in the profile")
    bottlenecks_any: list[Bottleneck] = Field(
        default_factory=list, description="The profile's bottleneck class is one of these")
    ops_any: list[str] = Field(
        default_factory=list, description="An op kind containing one of these names (case-insensitive)")
    min_kernel_count: int | None = Field(default=None, ge=1, description="Launches per forward >= this")
    min_headroom: float | None = Field(default=None, gt=0, description="runtime / floor >= this")
    needs_tf32_policy: bool = Field(default=False, description="Only when the run allows TF32")
    strict_fp32_only: bool = Field(default=False, description="Only when the run forbids TF32")
    inference_only: bool = Field(default=False, description="Only when the model runs in eval mode")
    training_only: bool = Field(default=False, description="Only when the model runs in training mode")

    @field_validator("structures_any", mode="before")
    @classmethod
    def _structures(cls, v: object) -> object:
        return _check_words(v, STRUCTURES)

    @field_validator("bottlenecks_any", mode="before")
    @classmethod
    def _bottlenecks(cls, v: object) -> object:
        return _check_words(v, BOTTLENECKS)


class SkillMeta(BaseModel):
    """The YAML front matter of skills/<id>/SKILL.md."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="Kebab-case, equal to the folder name")
    title: str = Field(min_length=3)
    kind: Literal["technique", "guardrail"] = Field(
        default="technique", description="'guardrail' skills say what not to do; excluded from search")
    structures: list[Structure] = Field(min_length=1)
    bottlenecks: list[Bottleneck] = Field(min_length=1)
    ops: list[str] = Field(default_factory=list,
                           description="Characteristic op names (lowercase); a match is a soft ranking bonus")
    triggers: str = Field(description="2-5 sentences in profiler terms: what the profile shows")
    preconditions: Preconditions = Field(default_factory=Preconditions)
    expected: dict[str, str] = Field(min_length=1, description="metric -> how it moves, roughly")
    conflicts: list[str] = Field(default_factory=list, description="Skill ids not to combine with")
    params: dict[str, list[Scalar]] = Field(default_factory=dict, description="Tunables and candidates")
    variants: list[dict[str, Any]] = Field(
        default_factory=list, description="The moves a round may try: each a small dict of parameters the "
        "skill's template reads (ctx.params); the default (no parameters) is always the first")

    @field_validator("id")
    @classmethod
    def _id(cls, v: str) -> str:
        if not ID_RE.match(v):
            raise ValueError(f"{v!r} is not kebab-case (lowercase words joined by '-')")
        return v

    @field_validator("structures", mode="before")
    @classmethod
    def _structures(cls, v: object) -> object:
        return _check_words(v, STRUCTURES)

    @field_validator("bottlenecks", mode="before")
    @classmethod
    def _bottlenecks(cls, v: object) -> object:
        return _check_words(v, BOTTLENECKS)

    @field_validator("ops")
    @classmethod
    def _ops(cls, v: list[str]) -> list[str]:
        for op in v:
            if op != op.lower() or not op.strip():
                raise ValueError(f"{op!r} must be a lowercase op name")
        return v

    @field_validator("triggers")
    @classmethod
    def _triggers(cls, v: str) -> str:
        v = " ".join(v.split())
        n = len(SENTENCE_END_RE.findall(v))
        if not 2 <= n <= 5:
            raise ValueError(f"has {n} sentences, want 2-5")
        return v

    @field_validator("params")
    @classmethod
    def _params(cls, v: dict[str, list[Scalar]]) -> dict[str, list[Scalar]]:
        for name, values in v.items():
            if not values:
                raise ValueError(f"{name!r} has no candidate values")
        return v

    @field_validator("variants")
    @classmethod
    def _variants(cls, v: list[dict[str, Any]]) -> list[dict[str, Any]]:
        seen: set[str] = set()
        for i, variant in enumerate(v):
            if not variant:
                raise ValueError(f"variant {i} is empty (the default variant is implied, do not list it)")
            key = variant_key(variant)
            if key in seen:
                raise ValueError(f"variant {i} repeats an earlier one: {key}")
            seen.add(key)
        return v

    def all_variants(self) -> list[dict[str, Any]]:
        """The default (no parameters) first, then the declared variants, in declared order."""
        return [{}, *(dict(x) for x in self.variants)]


class Skill(SkillMeta):
    """A loaded skill: the front matter, the Markdown body and where it came from."""

    body: str
    path: Path

    @property
    def trigger_text(self) -> str:
        """What gets embedded: the words a profile signature shares with this skill."""
        return (f"{self.title}. structure: {', '.join(self.structures)}. "
                f"bottleneck: {', '.join(self.bottlenecks)}. {self.triggers}")

    def front_matter(self) -> dict[str, object]:
        """The front matter as plain data (JSON output of `kernelskill skills show`)."""
        return self.model_dump(mode="json", exclude={"body", "path"})

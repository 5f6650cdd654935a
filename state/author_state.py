"""What an author keeps on its candidate: AuthorState (and the built-in author's BuiltinConfig).

One record for every author: the graph reads `templates`, `fallback_level`, `verbatim` and
`tokens`; the rest belongs to the author that wrote the candidate (the LLM author's usage, the
built-in author's config and bookkeeping) and stays at its default for the others. Checkpoints
written while this was a plain dict load as before: the dict's keys are these field names, and
keys this record does not know are ignored.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class BuiltinConfig(BaseModel):
    """The built-in author's whole choice for a candidate: (problem, config) reproduces it."""

    enabled: list[str] = Field(default_factory=list, description="Non-default templates turned on by "
                               "applied skills, newest last")
    disabled: list[str] = Field(default_factory=list, description="Templates turned off (by repair)")
    params: dict[str, dict[str, Any]] = Field(default_factory=dict, description="Template id -> the "
                                              "applied skill's parameters")
    fallback_regions: list[str] = Field(default_factory=list, description="Region keys (first op's "
                                        "output name) emitted as plain PyTorch")


class AuthorState(BaseModel):
    """What the author needs to derive the next candidate from this one, and what the graph reads."""

    model_config = ConfigDict(extra="ignore")

    # Read by the graph.
    templates: list[str] = Field(default_factory=list, description="Templates the candidate uses (skill "
                                 "statistics, the planner's 'already in the best')")
    fallback_level: int = Field(default=0, description="The repairer's level: 0 the author, 1 its last "
                                "resort, 2 the reference verbatim")
    verbatim: bool = Field(default=False, description="The reference forward verbatim (no graph captured, "
                           "or the repairer's reference fallback)")
    tokens: int | None = Field(default=None, description="LLM tokens spent on this candidate, retries "
                               "included; None: no LLM")
    # The LLM author's usage.
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    calls: int | None = Field(default=None, description="Chat requests that returned a reply")
    model: str | None = Field(default=None, description="The chat model that wrote the candidate")
    # The built-in author's config and bookkeeping.
    config: BuiltinConfig = Field(default_factory=BuiltinConfig)
    kernels: dict[str, str] = Field(default_factory=dict, description="Kernel name -> its region key")
    kernel_skills: dict[str, str] = Field(default_factory=dict, description=(
        "Triton kernel name -> the skill (template) that brought it in: solution.py's header"))
    kernel_aliases: dict[str, str] = Field(default_factory=dict, description="Name of a duplicate kernel "
                                           "-> the kept one (errors name the kept one)")
    templated: list[str] = Field(default_factory=list, description="Region keys in custom kernels")
    rewrites: list[str] = Field(default_factory=list, description="Program rewrites applied")
    partial: bool = Field(False, description=(
        "The forward was captured in parts around code fx cannot trace (no whole-forward templates)"))
    emit_failures: dict[str, str] = Field(default_factory=dict, description="Region key -> why its "
                                          "template failed (the region went back to PyTorch)")
    suspects: list[str] = Field(default_factory=list, description="Repair bisection: regions and "
                                "'rewrite:<id>' still suspected")
    trial: list[str] = Field(default_factory=list, description="Repair bisection: the suspects this "
                             "candidate turned back to PyTorch")

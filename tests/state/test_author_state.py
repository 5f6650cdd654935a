"""A candidate's author state is a typed record; threads checkpointed while it was a plain dict
still load (the checkpointer rebuilds a Candidate from its dumped fields)."""

from __future__ import annotations

import ormsgpack
import pytest
from kernelskill.graph.threads import serializer
from kernelskill.state.author_state import AuthorState
from kernelskill.state.graph_state import GraphState, RunSettings
from kernelskill.state.records import Candidate, Problem

# A built-in candidate's author_state as the dict the author wrote before it was typed, with a key
# no reader knows any more.
LEGACY_BUILTIN = {"config": {"enabled": ["fuse-gemm-epilogue"], "disabled": ["cuda-graph-replay"],
                             "params": {"fuse-gemm-epilogue": {"BLOCK_K": 64}}, "fallback_regions": ["relu"]},
                  "kernels": {"_k0": "linear"}, "templated": ["linear"], "templates": ["fuse-gemm-epilogue"],
                  "rewrites": [], "kernel_aliases": {}, "suspects": ["linear", "relu"], "trial": ["linear"],
                  "fallback_level": 1, "retired_key": 3}
LEGACY_LLM = {"tokens": 433, "prompt_tokens": 230, "completion_tokens": 203, "calls": 2, "model": "m"}


def legacy_checkpoint(author_state: dict) -> tuple[str, bytes]:
    """A Candidate as the checkpointer stored it: msgpack extension 5 (pydantic v2) holding the
    class's module and name and its model_dump(), author_state a dict."""
    dumped = {"source": "class ModelNew: ...", "author": "builtin", "skill_id": None, "params": {},
              "note": "", "author_state": author_state}
    inner = ormsgpack.packb(("kernelskill.state.records", "Candidate", dumped, "model_validate_json"))
    return "msgpack", ormsgpack.packb(ormsgpack.Ext(5, inner))


@pytest.mark.parametrize("legacy", [LEGACY_BUILTIN, LEGACY_LLM, {}], ids=["builtin", "llm", "empty"])
def test_a_candidate_checkpointed_with_the_dict_form_loads_typed(legacy: dict) -> None:
    cand = serializer().loads_typed(legacy_checkpoint(legacy))
    assert type(cand) is Candidate and type(cand.author_state) is AuthorState
    known = {k: v for k, v in legacy.items() if k in AuthorState.model_fields}
    assert cand.author_state.model_dump(include=set(known)) == known
    assert "retired_key" not in cand.author_state.model_dump()


def test_the_builtin_fields_keep_their_types() -> None:
    state = AuthorState.model_validate(LEGACY_BUILTIN)
    assert state.config.enabled == ["fuse-gemm-epilogue"]
    assert state.config.params["fuse-gemm-epilogue"] == {"BLOCK_K": 64}
    assert state.fallback_level == 1 and state.kernels == {"_k0": "linear"} and not state.verbatim
    assert AuthorState().tokens is None and AuthorState().config.fallback_regions == []
    with pytest.raises(ValueError, match="fallback_level"):
        AuthorState(fallback_level="deeper")


def test_a_typed_candidate_round_trips_through_the_checkpointer() -> None:
    ser = serializer()
    cand = Candidate(source="x", author_state=AuthorState.model_validate(LEGACY_BUILTIN))
    back = ser.loads_typed(ser.dumps_typed(cand))
    assert type(back) is Candidate and back == cand


def test_a_stored_graph_state_with_dict_author_states_validates() -> None:
    """What `stored_state` does with a thread's values: best and candidate as dumped dicts."""
    problem = Problem(name="p", path="p.py", source="")
    values = {"problem": problem.model_dump(), "settings": RunSettings(device="cpu").model_dump(),
              "candidate": {"source": "a", "author_state": LEGACY_LLM},
              "best": {"source": "b", "author_state": None}}
    state = GraphState.model_validate(values)
    assert state.candidate is not None and state.candidate.author_state.tokens == 433
    assert state.best is not None and state.best.author_state == AuthorState()

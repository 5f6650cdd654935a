"""Where the LLM author's requests go: the model, the endpoint and the key, resolved from LLMConfig
and the environment. Standard library only, so a missing key is reported in one line before the
chat client's imports (langchain, openai: seconds) are paid."""

from __future__ import annotations

import os
from dataclasses import dataclass

from ...state.config import LLMConfig
from ..base import AuthorError

# A local server needs no real key, but the client insists on one.
PLACEHOLDER_KEY = "not-needed"


@dataclass
class Endpoint:
    """The resolved connection settings (what a user-facing message names)."""

    model: str
    base_url: str | None
    api_key: str
    timeout_s: float

    @property
    def where(self) -> str:
        return self.base_url or "the OpenAI API"


def resolve(cfg: LLMConfig) -> Endpoint:
    base_url = cfg.base_url or os.environ.get("OPENAI_BASE_URL") or None
    key = os.environ.get(cfg.api_key_env)
    if not key:
        if base_url is None:
            raise AuthorError(f"the LLM author needs a key or a local server: set ${cfg.api_key_env}, "
                              "or pass --base-url URL of an OpenAI-compatible server")
        key = PLACEHOLDER_KEY
    return Endpoint(model=cfg.model, base_url=base_url, api_key=key, timeout_s=cfg.timeout_s)

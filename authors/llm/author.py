"""The LLM author: a chat model writes each candidate from a prompt grounded in the task.

generate -> the problem; apply -> the best candidate, the chosen skill's body and template, the
profile; repair -> the failing candidate, the error, the skill, the attempts log. Every reply
goes through `extract_code`; a reply without a usable ModelNew is answered with what was wrong
and asked again, within the same `retries` budget as transport failures. Tokens spent on a
candidate (retries included) are kept in `Candidate.author_state.tokens`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from ...state.author_state import AuthorState
from ...state.config import LLMConfig
from ...state.records import Candidate, Plan
from ..base import Author, AuthorError, AuthorTask
from . import prompts
from .chat import Reply, TransportError, ask, connect
from .endpoint import resolve
from .extract import ExtractionError, extract_code, prose_of

# Rationale: a restarting local server or a rate limit usually clears within seconds; the
# delay doubles per retry and stays short enough for an interactive run.
BACKOFF_S = 1.0
# An unusable reply is quoted back when asking again; its head is enough to show the mistake.
ECHO_CHARS = 2_000


class LLMAuthorError(AuthorError):
    """The chat model gave no usable candidate; `tokens` says what the attempt cost anyway."""

    def __init__(self, message: str, tokens: int = 0):
        super().__init__(message)
        self.tokens = tokens


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0

    def add(self, reply: Reply) -> None:
        self.prompt_tokens += reply.prompt_tokens
        self.completion_tokens += reply.completion_tokens
        self.calls += 1

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class LLMAuthor(Author):
    name = "llm"

    def __init__(self, config: LLMConfig | None = None):
        self.config = config or LLMConfig()
        self.endpoint = resolve(self.config)  # fails fast, in one line, without a key or a server
        self.chat = connect(self.config, self.endpoint)

    # ---- the Author interface -----------------------------------------------------------
    def can_apply(self, skill_id: str, task: AuthorTask | None = None,
                  params: dict[str, Any] | None = None) -> bool:
        return True  # the skill's text is grounding enough; no template is required

    def generate(self, task: AuthorTask) -> Candidate:
        return self._write(task, prompts.generate_prompt(task), "first candidate")

    def apply(self, task: AuthorTask, plan: Plan) -> Candidate:
        cand = self._write(task, prompts.apply_prompt(task, plan), f"applied {plan.skill_id}")
        cand.skill_id, cand.params = plan.skill_id, dict(plan.params)
        return cand

    def repair(self, task: AuthorTask) -> Candidate:
        cand = self._write(task, prompts.repair_prompt(task), "repair")
        if task.current is not None:
            cand.skill_id, cand.params = task.current.skill_id, dict(task.current.params)
        return cand

    # ---- one candidate: ask, extract, ask again with the reason ------------------------------
    def _write(self, task: AuthorTask, prompt: str, what: str) -> Candidate:
        base: list[BaseMessage] = [SystemMessage(prompts.system_prompt(task)), HumanMessage(prompt)]
        followup: list[BaseMessage] = []
        usage = Usage()
        why, wait = "", 0.0
        for attempt in range(self.config.retries + 1):
            time.sleep(wait)
            try:
                reply = ask(self.chat, base + followup, self.endpoint)
            except TransportError as e:
                why, wait = str(e), BACKOFF_S * 2 ** attempt
                continue
            wait = 0.0
            usage.add(reply)
            try:
                source = extract_code(reply.text, truncated=reply.truncated)
            except ExtractionError as e:
                why = str(e)
                if reply.truncated and "token limit" not in why:
                    why += "; the reply hit the token limit"
                followup = [AIMessage(prompts.clip(reply.text, ECHO_CHARS)),
                            HumanMessage(prompts.retry_prompt(why))]
                continue
            summary = prose_of(reply.text)
            note = f"{self.endpoint.model}: {what}" + (f": {summary}" if summary else "")
            state = AuthorState(tokens=usage.tokens, prompt_tokens=usage.prompt_tokens,
                                completion_tokens=usage.completion_tokens, calls=usage.calls,
                                model=self.endpoint.model)
            return Candidate(source=source, author="llm", note=note, author_state=state)
        tries = self.config.retries + 1
        raise LLMAuthorError(f"{what}: no usable reply from {self.endpoint.model} in {tries} "
                             f"{'try' if tries == 1 else 'tries'}: {why}", tokens=usage.tokens)

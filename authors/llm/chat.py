"""The chat endpoint: a langchain-openai model built from LLMConfig, one call, typed failures.

Any OpenAI-compatible server works (OpenAI, vLLM, SGLang, llama.cpp, Ollama). The client's own
retries are off: the author retries whole requests, so `retries` means one thing for transport
errors and unusable replies alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import openai
from langchain_core.messages import BaseMessage
from langchain_openai import ChatOpenAI

from ...state.config import LLMConfig
from ..base import AuthorError
from .endpoint import Endpoint


class TransportError(Exception):
    """The request did not produce a reply (connection, timeout, server overload): worth retrying."""


@dataclass
class Reply:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    truncated: bool = False
    """The reply stopped at max_tokens (finish_reason 'length')."""


def connect(cfg: LLMConfig, endpoint: Endpoint) -> ChatOpenAI:
    extra = None
    if endpoint.base_url is not None and "api.openai.com" not in endpoint.base_url:
        # langchain-openai sends `max_completion_tokens`; servers that only read the older
        # `max_tokens` (llama-cpp-python's, some Ollama versions) would otherwise not stop.
        # OpenAI itself refuses the two together.
        extra = {"max_tokens": cfg.max_tokens}
    return ChatOpenAI(model=endpoint.model, base_url=endpoint.base_url, api_key=endpoint.api_key,
                      temperature=cfg.temperature, max_tokens=cfg.max_tokens, timeout=endpoint.timeout_s,
                      max_retries=0, extra_body=extra)


def ask(chat: ChatOpenAI, messages: Sequence[BaseMessage], endpoint: Endpoint) -> Reply:
    """One chat completion. TransportError: retry may help; AuthorError: it will not."""
    try:
        msg = chat.invoke(list(messages))
    except openai.APITimeoutError:
        raise TransportError(f"no reply from {endpoint.where} within {endpoint.timeout_s:g} s") from None
    except openai.APIConnectionError as e:
        cause = _one_line(str(e.__cause__ or e) or "connection failed")
        raise TransportError(f"cannot reach {endpoint.where} ({cause}); is the server running?") from None
    except (openai.RateLimitError, openai.InternalServerError) as e:
        raise TransportError(f"{endpoint.where} is busy or failing (HTTP {e.status_code})") from None
    except openai.AuthenticationError:
        raise AuthorError(f"{endpoint.where} rejected the API key (HTTP 401): check the key variable"
                          ) from None
    except openai.NotFoundError:
        raise AuthorError(f"{endpoint.where} has no model {endpoint.model!r} or no chat endpoint (HTTP 404): "
                          "check --model and --base-url (which usually ends in /v1)") from None
    except openai.APIStatusError as e:
        raise AuthorError(f"{endpoint.where} refused the request (HTTP {e.status_code}): "
                          f"{_one_line(e.message)}") from None
    except (openai.APIError, ValueError, KeyError, TypeError) as e:
        # A 200 whose body is not a chat completion: a misbehaving server, possibly transient.
        raise TransportError(f"{endpoint.where} sent an unreadable response: {_one_line(str(e))}") from None
    usage = msg.usage_metadata or {}
    meta = msg.response_metadata or {}
    return Reply(text=msg.text,
                 prompt_tokens=int(usage.get("input_tokens") or 0),
                 completion_tokens=int(usage.get("output_tokens") or 0),
                 truncated=meta.get("finish_reason") == "length")


def _one_line(text: str, limit: int = 200) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[:limit - 3] + "..."

"""Process-wide resources nodes share: the author, the skill index, the configuration.

Graph state must stay serialisable (it is checkpointed), so live objects — an author holding a
captured graph, the embedding model, a chat client — are built here from state settings and
cached per process. A served graph builds them the same way from the same settings.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

from ..state.config import KernelSkillConfig

if TYPE_CHECKING:
    from ..authors.base import Author
    from ..skill_index.index import SkillIndex
    from ..state.graph_state import RunSettings

_CONFIG: list[KernelSkillConfig] = [KernelSkillConfig()]


def set_config(config: KernelSkillConfig) -> None:
    """The CLI installs its loaded configuration before running the graph."""
    _CONFIG[0] = config
    get_author.cache_clear()
    get_index.cache_clear()


def config() -> KernelSkillConfig:
    return _CONFIG[0]


@cache
def _author(kind: str, model: str | None, base_url: str | None, script: tuple[str, ...]) -> Author:
    if kind == "scripted":
        from ..authors.scripted import ScriptedAuthor

        return ScriptedAuthor(list(script))
    if kind == "llm":
        from ..authors.llm.endpoint import resolve

        llm = config().llm.model_copy(update={k: v for k, v in (("model", model), ("base_url", base_url))
                                               if v is not None})
        resolve(llm)  # no key, no server: one line now, before the chat client's seconds of imports
        from ..authors.llm.author import LLMAuthor

        return LLMAuthor(llm)
    from ..authors.builtin.author import BuiltinAuthor

    return BuiltinAuthor()


def get_author(settings: RunSettings) -> Author:
    return _author(settings.author, settings.model, settings.base_url, tuple(settings.script))


get_author.cache_clear = _author.cache_clear  # type: ignore[attr-defined]


@cache
def get_index() -> SkillIndex:
    from ..skill_index.index import SkillIndex

    paths = config().paths
    return SkillIndex(persist_dir=paths.skill_index, stats_path=paths.skill_stats, state_db=paths.state_db)

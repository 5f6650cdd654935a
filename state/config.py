"""One configuration tree for a run: loadable from a TOML/YAML/JSON file, overridable from the
command line. No hidden environment knobs beyond the standard ones (OPENAI_API_KEY,
OPENAI_BASE_URL, CUDA_VISIBLE_DEVICES, XDG_CACHE_HOME)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from .graph_state import RunSettings


def cache_home() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kernelskill"


class RunConfig(BaseModel):
    """How one optimization run evaluates and how long it may go on."""

    device: Literal["cpu", "cuda"] = Field("cuda", description="Where candidates run and are timed")
    size: Literal["small", "full"] = Field("full", description="Problem sizes (SMALL overrides or full)")
    author: Literal["builtin", "llm"] = Field("builtin", description="Who writes the kernels")
    rounds: int = Field(6, ge=1, description="Optimization rounds (planner decisions) at most")
    repairs: int = Field(3, ge=0, description="Repair attempts per failing candidate")
    wall_clock_s: float = Field(1800.0, gt=0, description="Stop planning new rounds after this long")
    trials: int = Field(5, ge=1, description="Correctness trials per evaluation")
    eval_timeout_s: float = Field(600.0, gt=0, description="Evaluator worker time limit per candidate")
    precision: Literal["default", "strict", "tf32"] = Field(
        "default", description="Precision policy, the same flags for candidates, yardstick and baselines: "
        "default (PyTorch's: TF32 convolutions, IEEE matmuls), strict (IEEE fp32 everywhere), tf32")
    baselines: bool = Field(True, description="Time eager and torch.compile next to each correct candidate")
    min_gain: float = Field(1.02, description="A candidate replaces the best only if this much faster")
    variants: int = Field(4, ge=1, description="Variants of the chosen skill a round builds and judges at "
                          "most (one candidate each, judged together)")
    parallel_judges: int = Field(1, ge=1, description="On a GPU, a round's candidates judged side by side at "
                                 "most: loaded, compiled and checked at once, timed one at a time "
                                 "(eval/batch.py); 1 (the default): one after another. Faster where "
                                 "a round's kernels are already tuned; where each variant autotunes "
                                 "new kernels, their compiles and tuning runs slow each other down")
    profile_budget_s: float = Field(25.0, ge=0, description="Seconds for the profiling child (timeline and "
                                    "Nsight Compute) per new best on a GPU; 0: the reviewer's breakdown only")


class LLMConfig(BaseModel):
    """An OpenAI-compatible chat endpoint (OpenAI, vLLM, SGLang, llama.cpp, Ollama...)."""

    model: str = Field("gpt-4o-mini", description="Model name the endpoint serves")
    base_url: str | None = Field(None, description="Endpoint URL; default $OPENAI_BASE_URL or OpenAI's")
    api_key_env: str = Field("OPENAI_API_KEY", description="Environment variable holding the key")
    temperature: float = Field(0.2, description="Sampling temperature")
    max_tokens: int = Field(4096, description="Reply length limit")
    timeout_s: float = Field(120.0, description="Per-request timeout")
    retries: int = Field(2, ge=0, description="Retries on transport errors and unusable replies")


class PathsConfig(BaseModel):
    """Where persistent state lives."""

    checkpoints: Path = Field(default_factory=lambda: cache_home() / "threads.sqlite",
                              description="SQLite checkpoint database (resumable threads)")
    skill_index: Path = Field(default_factory=lambda: cache_home() / "skill_index",
                              description="Chroma persist directory of the skill index")
    skill_stats: Path = Field(default_factory=lambda: cache_home() / "skill_stats.json",
                              description="Experience statistics written back after every attempt")
    state_db: str | None = Field(None, description="Where threads and experience statistics persist: "
                                 "sqlite:///PATH or postgresql://USER@HOST:PORT/DB (one database for a "
                                 "team and its hosts); default: the SQLite `checkpoints` and JSON "
                                 "`skill_stats` files")


class KernelSkillConfig(BaseModel):
    run: RunConfig = Field(default_factory=RunConfig)
    llm: LLMConfig = Field(default_factory=LLMConfig)
    paths: PathsConfig = Field(default_factory=PathsConfig)

    @classmethod
    def load(cls, path: str | Path | None) -> KernelSkillConfig:
        if path is None:
            return cls()
        p = Path(path)
        if not p.exists():
            raise FileNotFoundError(f"config file not found: {p}")
        text = p.read_text()
        data: dict[str, Any]
        if p.suffix == ".toml":
            import tomllib

            data = tomllib.loads(text)
        elif p.suffix in (".yaml", ".yml"):
            import yaml

            data = yaml.safe_load(text) or {}
        else:
            data = json.loads(text)
        return cls.model_validate(data)

    def override(self, section: str, **values: Any) -> KernelSkillConfig:
        """A copy with the given (non-None) values set in one section."""
        current = getattr(self, section)
        updated = current.model_copy(update={k: v for k, v in values.items() if v is not None})
        return self.model_copy(update={section: type(current).model_validate(updated.model_dump())})


def run_settings(cfg: KernelSkillConfig, model: str | None = None,
                 base_url: str | None = None) -> RunSettings:
    """The graph's RunSettings from the `run` section (same field names), plus the LLM endpoint."""
    fields = {k: v for k, v in cfg.run.model_dump().items() if k in RunSettings.model_fields}
    return RunSettings(**fields, model=model, base_url=base_url)

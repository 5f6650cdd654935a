"""`kernelskill optimize PROBLEM`: run the agent graph and write DIR/solution.py + report.json."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from .cmd_eval import add_device_arguments, add_precision_arguments, precision_of, resolve_device


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("problem", help="problem file (class Model, get_inputs, get_init_inputs)")
    p.add_argument("--author", choices=["builtin", "llm"], default=None, help="who writes kernels")
    p.add_argument("--model", default=None, help="LLM model name (with --author llm)")
    p.add_argument("--base-url", default=None, help="OpenAI-compatible endpoint (with --author llm)")
    add_device_arguments(p)
    p.add_argument("--rounds", type=int, default=None, help="optimization rounds at most")
    p.add_argument("--out", default=None, help="output folder (default: runs/<problem>)")
    p.add_argument("--thread", default=None, help="thread id: resume it if it exists, else start it")
    p.add_argument("--config", default=None, help="configuration file (TOML, YAML or JSON)")
    add_precision_arguments(p)


def run(args: argparse.Namespace) -> int:
    from ..eval.problem import ProblemError, check_problem_source, read_source
    from ..nodes.runtime import set_config
    from ..state.records import Problem
    from .cli import UsageError
    from .config import KernelSkillConfig, run_settings
    from .runner import run as run_graph

    try:
        cfg = KernelSkillConfig.load(args.config)
        source = read_source(args.problem, "problem")
        check_problem_source(source, args.problem)
    except (ProblemError, FileNotFoundError, ValueError) as e:
        raise UsageError(str(e).splitlines()[0]) from None
    if args.rounds is not None and args.rounds < 1:
        raise UsageError("--rounds must be at least 1")
    device, size = resolve_device(args.device, args.size)
    if device == "cuda":
        import torch

        if not torch.cuda.is_available():  # say so now, not after a run that can only keep the reference
            raise UsageError("CUDA requested but no GPU is visible to PyTorch; use --device cpu")
    cfg = cfg.override("run", device=device, size=size, author=args.author, rounds=args.rounds,
                       precision=precision_of(args))
    cfg = cfg.override("llm", model=args.model, base_url=args.base_url)
    set_config(cfg)
    settings = run_settings(cfg, args.model, args.base_url)
    from ..authors.base import AuthorError
    from ..nodes.runtime import get_author

    try:  # a misconfigured author (no key, no endpoint) is a usage error, not a traceback mid-run
        get_author(settings)
    except AuthorError as e:
        raise UsageError(str(e)) from None
    name = Path(args.problem).stem
    problem = Problem(name=name, path=str(args.problem), source=source, size=settings.size)
    thread = args.thread or f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"
    out = Path(args.out) if args.out else Path("runs") / name
    final = run_graph(problem, settings, thread, cfg.paths.checkpoints, out)
    return 0 if final.best is not None else 1

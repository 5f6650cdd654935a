"""`kernelskill bench PATH...`: optimize a suite of problems, one worker per GPU, resumable.

Writes DIR/results.jsonl (one row per problem, appended as it ends), DIR/<level>/<problem>/
(solution.py, report.json, log.txt, the thread's checkpoints), DIR/summary.json and DIR/report.html,
and prints the metrics table last. Progress goes to stderr, the table to stdout.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..bench.records import SETTINGS, BenchSettings
from ..state.output import plural

if TYPE_CHECKING:
    from ..bench.pool import WorkerSpec
    from ..bench.ray_pool import RayOptions

EXAMPLES = (
    "kernelskill bench problems/level1 --device cpu --jobs 2 --rounds 1 --out runs/bench-cpu",
    "kernelskill bench --resume --out runs/bench-cpu",
    "kernelskill bench problems/ --ray auto --out /shared/bench-1",
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    from .options import add_device_arguments, add_precision_arguments, add_state_db_argument

    p.add_argument("paths", nargs="*", metavar="PATH",
                   help="problem files, folders of them, or folders of level<N>/ folders (a KernelBench "
                        "checkout's KernelBench/); with --resume, default: the bench's own")
    p.add_argument("--author", choices=["builtin", "llm"], default=None,
                   help="who writes kernels (default builtin)")
    p.add_argument("--model", default=None,
                   help="LLM model name, with --author llm (default: the config file's llm.model)")
    p.add_argument("--base-url", default=None, help="OpenAI-compatible endpoint, with --author llm "
                   "(default: $OPENAI_BASE_URL, else OpenAI's)")
    add_device_arguments(p)
    p.add_argument("--gpus", default=None,
                   help="GPU indices to use, one worker each, e.g. 0,1,2 (default: all visible)")
    p.add_argument("--jobs", type=int, default=None,
                   help="problems in flight at once with --device cpu or --server (default 1); with "
                        "--ray, at most that many (default: as many as the cluster has room for)")
    p.add_argument("--out", default=None, help="bench folder (default runs/bench-<time>)")
    p.add_argument("--resume", action="store_true",
                   help="continue the bench in --out: skip finished problems")
    p.add_argument("--redo", action="append", default=[], metavar="GLOB",
                   help="with --resume: run the matching problems again even if finished (a fresh "
                        "thread; the new row supersedes the old one); repeatable (default: none)")
    p.add_argument("--filter", action="append", default=[], metavar="GLOB",
                   help="only problems whose key (level1/11_gelu) or file stem matches; repeatable "
                        "(default: all)")
    p.add_argument("--rounds", type=int, default=None,
                   help="optimization rounds per problem at most (default: the config file's run.rounds, 6)")
    p.add_argument("--server", default=None, metavar="URL",
                   help="run each problem as a thread on this LangGraph server instead of in-process "
                        "(default: none, in-process)")
    p.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                   help="run each problem as a Ray task holding one GPU (one CPU with --device cpu): "
                        "with no ADDRESS on a local Ray cluster started here, with `auto` or host:port "
                        "on a running one (needs kernelskill[ray]; default: none, the local pool)")
    p.add_argument("--config", default=None, help="configuration file, TOML, YAML or JSON "
                   "(default: none, the built-in defaults)")
    add_precision_arguments(p)
    add_state_db_argument(p)


def parse_gpus(text: str, visible: int) -> list[int]:
    """'0,2' -> [0, 2], checked against the number of visible GPUs; ValueError says what is wrong."""
    try:
        ids = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"bad --gpus {text!r}: use comma-separated GPU indices like 0,1,2") from None
    if not ids or any(i < 0 for i in ids) or len(set(ids)) != len(ids):
        raise ValueError(f"bad --gpus {text!r}: use distinct non-negative GPU indices like 0,1,2")
    if max(ids) >= visible:
        raise ValueError(f"--gpus {text}: only {visible} GPU(s) visible (indices 0-{visible - 1})"
                         if visible else f"--gpus {text}: no GPU is visible; use --device cpu")
    return ids


def _settings(args: argparse.Namespace, out: Path) -> BenchSettings:
    """The bench's settings: from the command line, or on --resume from DIR/bench.json (a conflicting
    option is an error: one bench folder holds one set of settings)."""
    from .main import UsageError
    from .options import precision_of, resolve_device

    given = {"device": args.device, "size": args.size, "author": args.author, "rounds": args.rounds,
             "model": args.model, "base_url": args.base_url, "precision": precision_of(args)}
    if args.resume:
        try:
            saved = BenchSettings.model_validate_json((out / SETTINGS).read_text())
        except FileNotFoundError:
            raise UsageError(f"--resume: {out} is not a bench folder (no {SETTINGS}); "
                             "drop --resume to start one") from None
        for k, v in given.items():
            if v is not None and v != getattr(saved, k):
                raise UsageError(f"--resume: {out} was benched with {k}={getattr(saved, k)}, not {v}; "
                                 "resume with the same settings or use another --out")
        changes = {"paths": _absolute(args.paths), "filters": args.filter, "server": args.server,
                   "config": args.config and _absolute([args.config])[0],
                   "state_db": _resumed_state_db(out, saved.state_db, args.state_db)}
        return saved.model_copy(update={k: v for k, v in changes.items() if v})
    if not args.paths:
        raise UsageError("no problems given: kernelskill bench PATH... (a problem file, a folder of them, "
                         "or a folder of level<N>/ folders)")
    if (out / "results.jsonl").exists():
        raise UsageError(f"{out} already holds a bench: add --resume to continue it, or pick another --out")
    device = args.device or ("cuda" if args.server else None)
    device, size = resolve_device(device, args.size)
    return BenchSettings(paths=_absolute(args.paths), filters=list(args.filter), device=device, size=size,
                         author=args.author or "builtin", rounds=args.rounds or 0, model=args.model,
                         base_url=args.base_url, precision=precision_of(args) or _config_precision(args),
                         server=args.server, state_db=_state_db(args.state_db),
                         config=args.config and _absolute([args.config])[0])


def _state_db(url: str | None) -> str | None:
    """--state-db checked now (a malformed URL, PostgreSQL without the extra: one line); a bench keeps
    only a PostgreSQL one (a SQLite file per problem lives in the bench folder)."""
    from ..state.config import KernelSkillConfig
    from .options import with_state_db

    if url is None:
        return None
    _, db = with_state_db(KernelSkillConfig(), url)
    return db.url if db.is_postgres else None


def _resumed_state_db(out: Path, saved: str | None, given: str | None) -> str | None:
    """The database a resumed bench checkpoints in: the one it started with. bench.json keeps it
    without its password, so a URL that had one is given again (checked against the kept one)."""
    from ..state.state_db import redact
    from .main import UsageError

    url = _state_db(given)
    if saved and url and redact(url) != saved:
        raise UsageError(f"--resume: {out} was benched with --state-db {saved}, not {redact(url)}; "
                         "resume with the same database or use another --out")
    if saved and not url and ":***@" in saved:
        raise UsageError(f"--resume: {out} checkpoints in {saved}: give --state-db again with its "
                         "password (bench.json never keeps it), or use PGPASSWORD or ~/.pgpass")
    return url or saved


def _config_precision(args: argparse.Namespace) -> str:
    """The config file's policy when the command line names none (bench.json then keeps it)."""
    from ..state.config import KernelSkillConfig
    from .main import UsageError

    try:
        return KernelSkillConfig.load(args.config).run.precision
    except (FileNotFoundError, ValueError) as e:
        raise UsageError(str(e).splitlines()[0]) from None


def _absolute(paths: list[str]) -> list[str]:
    """Absolute, so that `--resume` works from any working directory."""
    return [str(Path(p).absolute()) for p in paths]


def _workers(args: argparse.Namespace, s: BenchSettings) -> list[WorkerSpec]:
    from ..bench.pool import CPUS_ENV, WorkerSpec, cpu_shares
    from .main import UsageError

    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    if s.device == "cuda" and not s.server:
        if args.jobs is not None:
            raise UsageError("--jobs is for --device cpu and --server; on GPUs it is one worker per "
                             "--gpus entry")
        import torch

        visible = torch.cuda.device_count()
        try:
            ids = parse_gpus(args.gpus, visible) if args.gpus else list(range(visible))
        except ValueError as e:
            raise UsageError(str(e)) from None
        if not ids:
            raise UsageError("no GPU is visible: use --device cpu, or run on a machine with a CUDA GPU")
        # Indices are relative to the GPUs this process sees, which CUDA_VISIBLE_DEVICES may already narrow.
        names = [x for x in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if x.strip()]
        cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
        shares = cpu_shares(cpus, len(ids))
        return [WorkerSpec(f"GPU {i}", {"CUDA_VISIBLE_DEVICES": names[i] if i < len(names) else str(i),
                                        **({CPUS_ENV: ",".join(map(str, shares[k]))} if shares else {})})
                for k, i in enumerate(ids)]
    if args.gpus:
        raise UsageError("--gpus needs --device cuda (and no --server: the server owns its GPUs)")
    label = "server" if s.server else "cpu"
    return [WorkerSpec(f"{label} {k}" if (args.jobs or 1) > 1 else label) for k in range(args.jobs or 1)]


def _ray_options(args: argparse.Namespace, s: BenchSettings) -> RayOptions:
    """--ray's options; no pool-only option with it."""
    from ..bench.ray_pool import RayOptions
    from .main import UsageError

    if s.server:
        raise UsageError("--ray runs problems on Ray workers and --server on a LangGraph server: pick one")
    if args.gpus:
        raise UsageError("--gpus is for the local pool; on Ray, start each node with the GPUs it may use "
                         "(CUDA_VISIBLE_DEVICES=0,1 ray start ...)")
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    return RayOptions(address=_ray_address(args.ray), gpu=s.device == "cuda", max_in_flight=args.jobs)


def _ray_address(text: str) -> str:
    """--ray's address, checked before any work, as is that Ray is installed."""
    from ..bench.ray_pool import INSTALL, parse_address, ray_installed
    from .main import UsageError

    try:
        address = parse_address(text)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if not ray_installed():
        raise UsageError(INSTALL)
    return address


def run(args: argparse.Namespace) -> int:
    from ..bench.metrics import render_table
    from ..bench.runner import BenchError, plan
    from ..bench.runner import run as run_bench
    from ..bench.worst import render as render_worst
    from ..bench.worst import worst
    from .main import UsageError

    if args.resume and not args.out:
        raise UsageError("--resume needs --out DIR: the folder of the bench to continue")
    if args.redo and not args.resume:
        raise UsageError("--redo needs --resume: it runs problems of an existing bench again")
    if args.rounds is not None and args.rounds < 1:
        raise UsageError("--rounds must be at least 1")
    if args.ray is not None:  # before planning, which a bad address (a problem PATH after --ray) would fail
        _ray_address(args.ray)
    out = Path(args.out or f"runs/bench-{time.strftime('%Y%m%d-%H%M%S')}").resolve()
    say = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    try:
        planned = plan(_settings(args, out), out, args.redo, warn=lambda m: say(f"kernelskill bench: {m}"))
        # A finished bench needs no workers: `--resume` then only rewrites summary and report, which
        # works anywhere (a bench folder copied back from an air-gapped GPU node, say).
        ray = _ray_options(args, planned.settings) if args.ray is not None and planned.todo else None
        specs = _workers(args, planned.settings) if planned.todo and ray is None else []
        ran = run_bench(planned, specs, say, ray)
    except BenchError as e:
        raise UsageError(str(e)) from None
    print(render_table(ran.summary))
    if listed := render_worst(*worst(ran.rows, out)):
        print(listed)
    say(f"wrote {out / 'results.jsonl'}, {out / 'summary.json'} and {ran.html} "
        f"({time.time() - ran.started:.0f} s this session)")
    if ran.interrupted:
        say(f"interrupted: {ran.done} of {plural(ran.total, 'problem')} done; continue with "
            f"`kernelskill bench --resume --out {out}`")
        return 130
    return 1 if any(row.error for row in ran.rows) else 0

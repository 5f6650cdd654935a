"""Running a bench: which problems are still to do, one task per problem for the worker pool (or Ray), a
row appended to DIR/results.jsonl as each ends, then DIR/summary.json and DIR/report.html.

The command line (cli/cmd_bench.py) turns options into BenchSettings and WorkerSpecs; this
module plans and runs them. A bench that cannot run raises BenchError (one line).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..state.config import KernelSkillConfig
from ..state.output import plural, write_atomic
from .discovery import BenchProblem
from .metrics import Summary
from .pool import WorkerSpec
from .records import PLACEMENT, SETTINGS, BenchSettings, ResultRow

if TYPE_CHECKING:
    from .ray_pool import RayOptions

Printer = Callable[[str], None]


class BenchError(Exception):
    """A bench that cannot run as asked: one line for the user."""


@dataclass
class BenchPlan:
    settings: BenchSettings  # rounds resolved from the configuration
    out: Path
    config: KernelSkillConfig  # the file's, with the bench's settings applied
    problems: list[BenchProblem]
    todo: list[BenchProblem]  # not finished yet, or asked again with --redo
    redo: set[str]  # keys run again on a fresh thread


@dataclass
class BenchOutcome:
    rows: list[ResultRow]  # the latest row per problem, this session's and earlier ones
    summary: Summary
    html: Path
    done: int
    total: int
    interrupted: bool
    started: float


def progress_line(done: int, total: int, row: ResultRow, label: str, eta_s: float | None) -> str:
    """'[12/88] level1/11_gelu ok 1.83x eager, 1.21x compile (41 s, GPU 0)'."""
    if row.error:
        word = f"ERROR {row.error[:120]}"
    elif not row.correct:
        word = "FAIL no correct candidate"
    elif row.device != "cuda":
        word = "ok (CPU timing)"
    else:
        word = "ok" if not row.solution_is_reference else "ref (reference kept)"
        if row.speedup_vs_eager:
            word += f" {row.speedup_vs_eager:.2f}x eager"
            if row.speedup_vs_compile:
                word += f", {row.speedup_vs_compile:.2f}x compile"
    eta = "" if eta_s is None or done >= total else (
        f", eta {eta_s:.0f} s" if eta_s < 120 else f", eta {eta_s / 60:.0f} min")
    return f"[{done}/{total}] {row.problem} {word} ({row.wall_s:.0f} s, {label}{eta})"


def plan(s: BenchSettings, out: Path, redo_globs: list[str], warn: Printer) -> BenchPlan:
    """The problems of the bench in `out` and which of them still need a run."""
    from ..eval.problem import ProblemError
    from .discovery import DiscoveryError, discover, select
    from .records import read_rows

    try:
        cfg = KernelSkillConfig.load(s.config)
        problems = select(discover(s.paths, warn=warn), s.filters)
        redo = {p.key for p in select(problems, redo_globs, "--redo")} if redo_globs else set()
    except (DiscoveryError, ProblemError, FileNotFoundError, ValueError) as e:
        raise BenchError(str(e).splitlines()[0]) from None
    cfg = cfg.override("run", device=s.device, size=s.size, author=s.author, rounds=s.rounds or None,
                       precision=s.precision)
    cfg = cfg.override("llm", model=s.model, base_url=s.base_url)
    cfg = cfg.override("paths", state_db=s.state_db)  # the workers' checkpoints and statistics
    s = s.model_copy(update={"rounds": cfg.run.rounds})
    finished = {row.problem for row in read_rows(out) if row.error is None}
    todo = [p for p in problems if p.key not in finished or p.key in redo]
    return BenchPlan(s, out, cfg, problems, todo, redo)


def run(plan: BenchPlan, specs: list[WorkerSpec], say: Printer,
        ray: RayOptions | None = None) -> BenchOutcome:
    """Run the plan's todo on `specs` (or as Ray tasks, with `ray`), then rewrite summary and report;
    Ctrl-C stops the workers and still writes both (the outcome says it was interrupted)."""
    from ..state.config import run_settings
    from .discovery import thread_id
    from .metrics import summarize
    from .pool import PoolError, WorkerPool
    from .records import all_rows, append_row, error_row, read_rows, row_from_report
    from .report import write_report
    from .server import server_thread_id  # the row names the thread where it can be inspected

    s, out, cfg, todo = plan.settings, plan.out, plan.config, plan.todo
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / SETTINGS, s.model_dump_json(indent=1))
    graph_settings = run_settings(cfg, s.model, s.base_url)
    by_key = {p.key: p for p in plan.problems}
    total, done = len(plan.problems), len(plan.problems) - len(todo)
    where = (f"Ray ({ray.address})" if ray else
             f"{plural(len(specs), 'worker')} [{', '.join(w.label for w in specs)}]")
    say(f"bench: {plural(total, 'problem')} ({done} already done) on {where}, "
        f"{s.device}, {s.size} sizes, author {s.author}, "
        f"{plural(s.rounds, 'round')} -> {out}")
    started = time.time()

    def on_result(task: dict[str, Any], reply: dict[str, Any], label: str) -> None:
        nonlocal done
        p, now = by_key[task["key"]], time.time()
        wall, err, pdir = float(reply.get("wall_s") or 0.0), reply.get("error"), Path(task["out"])
        tid = task["row_thread"]
        row = None
        if not err:
            try:
                report = json.loads((pdir / "report.json").read_text())
                row = row_from_report(p, report, device=s.device, wall_s=wall, thread_id=tid, bench_dir=out,
                                      out_dir=pdir, finished_at=now)
            except (OSError, ValueError) as e:
                err = f"no usable report.json: {e}"
        if row is None:
            row = error_row(p, err or "unknown error", device=s.device, wall_s=wall, thread_id=tid,
                            finished_at=now)
        row = row.model_copy(update={k: reply[k] for k in PLACEMENT if reply.get(k)})
        append_row(out, row)
        done += 1
        ran = done - (total - len(todo))
        eta = (now - started) / ran * (total - done) if ran else None
        say(progress_line(done, total, row, label, eta))

    runs = Counter(row.problem for row in all_rows(out))
    tasks = [{"key": p.key, "path": str(p.path), "name": p.name, "out": str(out / p.level / p.name),
              # A redo is a fresh thread: the finished one would only replay its result.
              "thread_id": (tid := thread_id(s.bench_id, p) + (f"-redo{runs.get(p.key, 0)}"
                                                               if p.key in plan.redo else "")),
              "row_thread": server_thread_id(tid) if s.server else tid}
             for p in todo]
    interrupted = False
    try:
        if tasks:
            if not s.server and (ray or len(specs) > 1):
                _warm_index(cfg)
            setup = {"config": cfg.model_dump(mode="json"), "settings": graph_settings.model_dump(),
                     "server": s.server}
            if ray:
                from .ray_pool import RayPool

                RayPool(ray, setup, out / "workers", say).run(tasks, on_result)
            else:
                WorkerPool(specs, setup, out / "workers").run(tasks, on_result)
    except PoolError as e:
        raise BenchError(str(e)) from None
    except KeyboardInterrupt:
        interrupted = True
    rows = read_rows(out)
    summary = summarize(rows)
    write_atomic(out / "summary.json", summary.model_dump_json(indent=1))
    html = write_report(out, rows, summary, {"device": s.device, "size": s.size, "author": s.author,
                                             "rounds": s.rounds, "server": s.server,
                                             "precision": s.precision})
    return BenchOutcome(rows, summary, html, done, total, interrupted, started)


def _warm_index(cfg: KernelSkillConfig) -> None:
    """Build the skill index once before the workers start, so they only read it (no racing first sync)."""
    from ..nodes.runtime import get_index, set_config

    set_config(cfg)
    get_index().sync()

"""One bench result row per problem, and DIR/results.jsonl: appended and fsynced as each problem ends.

A killed bench leaves at worst a torn last line, which readers skip. A row with `error` set
records a run that crashed (worker died, server error): `--resume` runs that problem again and the
newer row supersedes it, so readers keep the last row per problem.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError, field_serializer, model_validator

from .discovery import BenchProblem

RESULTS = "results.jsonl"
SETTINGS = "bench.json"
PLACEMENT = ("host", "node_id", "gpu_index")  # where a problem ran: ResultRow fields the worker's reply fills


class BenchSettings(BaseModel):
    """How a bench was started (DIR/bench.json): `--resume` continues it with the same settings."""

    bench_id: str = Field(default_factory=lambda: uuid.uuid4().hex[:8],
                          description="Made once per bench folder: part of every thread id")
    paths: list[str] = Field(description="Problem files and folders (absolute)")
    filters: list[str] = Field(default_factory=list, description="--filter globs")
    device: str
    size: str
    author: str
    rounds: int
    model: str | None = None
    base_url: str | None = None
    precision: str = Field("default", description="Precision policy (eval/precision.py), both sides")
    server: str | None = Field(None, description="LangGraph server URL; None runs in-process")
    config: str | None = Field(None, description="Configuration file")
    state_db: str | None = Field(None, description="--state-db: the PostgreSQL database every worker "
                                 "checkpoints in (None: a SQLite file per problem); its password is "
                                 "never written to bench.json")

    @field_serializer("state_db")
    def _no_password(self, url: str | None) -> str | None:
        from ..state.state_db import redact

        return redact(url) if url else url


    @model_validator(mode="before")
    @classmethod
    def _legacy_tf32(cls, data: Any) -> Any:
        """bench.json written before the three policies stored `allow_tf32`."""
        if isinstance(data, dict) and "precision" not in data and "allow_tf32" in data:
            data = {**data, "precision": "tf32" if data["allow_tf32"] else "strict"}
        return data


class ResultRow(BaseModel):
    """What one problem's bench run produced (GPU times in ms; speedups None on a CPU run)."""

    problem: str = Field(description="Key: <level>/<file stem>")
    level: str
    category: str
    path: str = Field(description="The problem file")
    device: str
    correct: bool = Field(description="A correct candidate was found (best verdict)")
    solution_is_reference: bool = Field(True, description="solution.py is the reference Model itself")
    uses_own_kernels: bool = Field(False, description="solution.py runs our kernels (correct, not the "
                                                      "reference)")
    precision: str = Field("default", description="Precision policy the row was judged and timed under")
    runtime_ms: float | None = Field(None, description="The delivered solution.py's time (a kept reference "
                                     "is timed too)")
    eager_ms: float | None = None
    compile_ms: float | None = None
    baselines_in: str | None = Field(None, description="Where eager and torch.compile were timed "
                                     "(eval/judge/baselines.py): process, process+judge or judge; None in "
                                     "rows written before it was recorded (the judge)")
    speedup_vs_eager: float | None = None
    speedup_vs_compile: float | None = None
    floor_ms: float | None = Field(None, description="Speed-of-light time (bytes and FLOPs over ceilings)")
    timing_is_cpu: bool = True
    gpu: str | None = None
    custom_kernels: int = 0
    rounds: int = 0
    attempts: int = 0
    wall_s: float = Field(0.0, description="Wall time of this problem in this bench session")
    eval_s: list[float] = Field(default_factory=list, description="Wall seconds of each of its "
                                "evaluations, in order (the reviewer's; repeats are not evaluated)")
    skills_tried: list[str] = Field(default_factory=list, description="Skills the planner applied, in order")
    skill_won: str | None = Field(None, description="The applied skill that produced the kept solution")
    templates: list[str] = Field(default_factory=list, description="Skill templates in the kept solution")
    stop_reason: str | None = None
    solution: str | None = Field(None, description="solution.py, relative to the bench folder")
    report: str | None = Field(None, description="report.json (attempts), relative to the bench folder")
    thread_id: str
    error: str | None = Field(None, description="The run itself failed (not a verdict): one line")
    finished_at: float = 0.0
    host: str | None = Field(None, description="Hostname of the worker that ran it (None: not known, "
                             "as for a worker that died)")
    node_id: str | None = Field(None, description="Ray node id it ran on (Ray benches only)")
    gpu_index: str | None = Field(None, description="The GPU it ran on: its host's CUDA_VISIBLE_DEVICES "
                                  "entry (None on a CPU bench)")


def row_from_report(problem: BenchProblem, report: dict[str, Any], *, device: str, wall_s: float,
                    thread_id: str, bench_dir: Path, out_dir: Path, finished_at: float) -> ResultRow:
    """A row from the runner's report.json (graph/report.py) of one finished problem. Timings are
    those of the delivered file (a kept reference is measured too); reports written before that
    carry only the best candidate's."""
    best = report.get("best") or {}
    delivered = report.get("delivered") or best
    correct = bool(best.get("correct"))
    is_ref = bool(report.get("solution_is_reference", True))
    attempts = report.get("attempts") or []
    tried = [a["skill_id"] for a in attempts if a.get("node") == "generator" and a.get("skill_id")]
    rel = out_dir.relative_to(bench_dir).as_posix()
    return ResultRow(
        problem=problem.key, level=problem.level, category=problem.category, path=str(problem.path),
        device=device, correct=correct, solution_is_reference=is_ref,
        uses_own_kernels=correct and not is_ref and int(best.get("custom_kernels") or 0) > 0,
        precision=(report.get("precision") or {}).get("policy", "default"),
        **{k: delivered.get(k) for k in ("runtime_ms", "eager_ms", "compile_ms", "speedup_vs_eager",
                                          "speedup_vs_compile", "floor_ms", "baselines_in")},
        timing_is_cpu=bool(delivered.get("timing_is_cpu", device != "cuda")), gpu=delivered.get("gpu"),
        custom_kernels=int(best.get("custom_kernels") or 0), rounds=int(report.get("rounds") or 0),
        attempts=len(attempts), wall_s=round(wall_s, 2), skills_tried=list(dict.fromkeys(tried)),
        eval_s=[float(a["eval_s"]) for a in attempts if a.get("eval_s") is not None],
        skill_won=None if is_ref else best.get("skill_id"),
        templates=[] if is_ref else list(best.get("templates") or []),
        stop_reason=report.get("stop_reason"), solution=f"{rel}/solution.py", report=f"{rel}/report.json",
        thread_id=thread_id, finished_at=finished_at)


def error_row(problem: BenchProblem, error: str, *, device: str, wall_s: float, thread_id: str,
              finished_at: float) -> ResultRow:
    return ResultRow(problem=problem.key, level=problem.level, category=problem.category,
                     path=str(problem.path), device=device, correct=False, timing_is_cpu=device != "cuda",
                     wall_s=round(wall_s, 2), thread_id=thread_id, error=error.splitlines()[0][:300],
                     finished_at=finished_at)


def append_row(bench_dir: Path, row: ResultRow) -> None:
    """Append one line and fsync: once this returns, a crash cannot lose the row."""
    path = bench_dir / RESULTS
    with open(path, "a+b") as f:
        f.seek(0, os.SEEK_END)
        if f.tell():  # a torn last line (killed mid-write) must not swallow this row
            f.seek(-1, os.SEEK_END)
            if f.read(1) != b"\n":
                f.write(b"\n")
        f.write(row.model_dump_json().encode() + b"\n")
        f.flush()
        os.fsync(f.fileno())


def all_rows(bench_dir: Path) -> list[ResultRow]:
    """Every row of results.jsonl in file order (a redone problem has several); torn lines skipped."""
    path = bench_dir / RESULTS
    rows: list[ResultRow] = []
    for line in path.read_text().splitlines() if path.exists() else []:
        if not line.strip():
            continue
        try:
            rows.append(ResultRow.model_validate(json.loads(line)))
        except (ValueError, ValidationError):
            continue
    return rows


def read_rows(bench_dir: Path) -> list[ResultRow]:
    """The last row per problem, in file order of their first appearance; torn lines are skipped."""
    return list({row.problem: row for row in all_rows(bench_dir)}.values())

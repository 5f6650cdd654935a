"""DIR/report.html: one self-contained page (inline CSS and SVG, no script, nothing fetched).

Figures: speedup distributions per level against eager and torch.compile, per-category bars,
a roofline scatter (achieved time vs speed-of-light floor), wall time and rounds per problem,
skills tried and won, and a table linking each problem's solution.py and report.json.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from html import escape
from pathlib import Path
from urllib.parse import quote

from ..state.output import plural, write_atomic
from .metrics import ALL, Summary, geomean, level_order, speedup, table_rows
from .records import ResultRow
from .svg import bar_chart, message, scatter_loglog, strip_chart

REPORT = "report.html"
CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1100px;color:#222;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 6px;border-bottom:1px solid #ddd}
.meta{color:#555}.note{color:#666;font-size:13px;margin:2px 0 8px}
table{border-collapse:collapse;font-size:12.5px}td,th{padding:3px 8px;border-bottom:1px solid #eee}
th{text-align:left;background:#f6f6f6;position:sticky;top:0}td.n{text-align:right;font-variant-numeric:tabular-nums}
.ok{color:#2a7d2a}.fail{color:#b22}.ref{color:#a60}figure{margin:8px 0 0}
"""


def _x(v: float | None) -> str:
    return "" if v is None else f"{v:.2f}x"


def _ms(v: float | None) -> str:
    return "" if v is None else f"{v:.4g}"


def _status(r: ResultRow) -> tuple[str, str]:
    if r.error:
        return "fail", "error"
    if not r.correct:
        return "fail", "no correct"
    return ("ref", "reference kept") if r.solution_is_reference else ("ok", "ok")


def _tip(r: ResultRow, v: float) -> str:
    return f"{r.problem} ({r.category}): {v:.2f}x"


def speedup_figure(rows: list[ResultRow], baseline: str, name: str) -> str:
    timed = [r for r in rows if r.device == "cuda"]
    if not timed:
        return message(f"CPU bench: no speedups vs {name} (CPU timings are never speedups)",
                       f"speedup vs {name}")
    levels = sorted({r.level for r in timed}, key=level_order)
    bands = {lv: [(s, _tip(r, s)) for r in timed if r.level == lv and (s := speedup(r, baseline)) is not None]
             for lv in levels}
    return strip_chart(bands, f"speedup vs {name} per level",
                       f"speedup vs {name} (log scale; failed or reference-only = 1.0; bar = geomean)")


def category_figure(rows: list[ResultRow]) -> str:
    cats = sorted({r.category for r in rows})
    by = {c: [r for r in rows if r.category == c] for c in cats}
    labels = [f"{c} ({len(by[c])})" for c in cats]
    if any(r.device == "cuda" for r in rows):
        series = [(f"geomean vs {n}", [geomean(speedup(r, b) or 1.0 for r in by[c]) for c in cats])
                  for b, n in (("eager", "eager"), ("compile", "torch.compile"))]
        return bar_chart(labels, series, "geomean speedup per category", "{:.2f}x", ref=1.0)
    series = [("correct", [sum(r.correct for r in by[c]) / len(by[c]) for c in cats]),
              ("own kernels", [sum(r.uses_own_kernels for r in by[c]) / len(by[c]) for c in cats])]
    return bar_chart(labels, [(n, [100 * v for v in vals]) for n, vals in series],  # type: ignore[misc]
                     "correct and own-kernel share per category (CPU bench)", "{:.0f}%")


def roofline_figure(rows: list[ResultRow]) -> str:
    levels = sorted({r.level for r in rows}, key=level_order)
    pts = [(r.floor_ms, r.runtime_ms, levels.index(r.level),
            f"{r.problem}: {r.runtime_ms:.4g} ms, floor {r.floor_ms:.4g} ms "
            f"({r.runtime_ms / r.floor_ms:.1f}x the floor)")
           for r in rows if r.correct and r.floor_ms and r.runtime_ms and r.floor_ms > 0 and r.runtime_ms > 0]
    if not pts:
        return message("no speed-of-light floors: the floor needs a GPU's measured ceilings", "roofline")
    return scatter_loglog(pts, levels, "achieved time vs speed-of-light floor", "speed-of-light floor (ms)",
                          "achieved time (ms)")


def time_figure(rows: list[ResultRow]) -> str:
    order = sorted(rows, key=lambda r: -r.wall_s)
    labels = [f"{r.problem} · {r.rounds} r" for r in order]
    return bar_chart(labels, [("wall s", [r.wall_s for r in order])], "wall time per problem", "{:.0f} s",
                     label_w=260)


def skills_figure(rows: list[ResultRow]) -> str:
    tried = Counter(s for r in rows for s in r.skills_tried)
    won = Counter(r.skill_won for r in rows if r.skill_won)
    used = Counter(t for r in rows for t in r.templates)
    skills = sorted(set(tried) | set(won) | set(used), key=lambda s: (-tried[s], -won[s], -used[s], s))
    if not skills:
        return message("no skill was applied or used in a kept solution", "skills")
    series = [("tried (problems)", [float(tried[s]) for s in skills]),
              ("won", [float(won[s]) for s in skills]),
              ("in kept solution", [float(used[s]) for s in skills])]
    return bar_chart(skills, series, "skills tried, won and kept", "{:.0f}", label_w=240)  # type: ignore[arg-type]


def _link(rel: str | None, text: str) -> str:
    return f'<a href="{escape(quote(rel))}">{text}</a>' if rel else ""


def ran_on(r: ResultRow) -> str:
    """'gpu-07 GPU 3' (hover: the Ray node id); empty where the row does not say (a dead worker's)."""
    where = escape(" ".join(x for x in (r.host, f"GPU {r.gpu_index}" if r.gpu_index else None) if x))
    return f'<span title="Ray node {escape(r.node_id, quote=True)}">{where}</span>' if r.node_id else where


def placement_note(rows: list[ResultRow]) -> str:
    """'ran on 2 hosts, 4 GPUs: gpu-07 (GPU 0, 1), gpu-08 (GPU 0, 1)': where the bench's problems ran."""
    hosts: dict[str, set[str]] = {}
    for r in rows:
        if r.host:
            hosts.setdefault(r.host, set()).update([r.gpu_index] if r.gpu_index else [])
    if not hosts:
        return ""
    gpus = sum(len(g) for g in hosts.values())
    each = [f"{h} (GPU {', '.join(sorted(g))})" if g else h for h, g in sorted(hosts.items())]
    count = plural(len(hosts), "host") + (f", {plural(gpus, 'GPU')}" if gpus else "")
    return escape(f"ran on {count}: {', '.join(each)}")


def problem_table(rows: list[ResultRow]) -> str:
    head = ("problem", "level", "category", "status", "ms", "eager ms", "compile ms", "vs eager",
            "vs compile", "floor ms", "kernels", "rounds", "wall s", "skill won", "ran on", "files")
    out = ["<table><thead><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr></thead><tbody>"]
    for r in rows:
        cls, word = _status(r)
        title = escape(r.error or r.stop_reason or "", quote=True)
        cells = [escape(r.problem), escape(r.level), escape(r.category),
                 f'<span class="{cls}" title="{title}">{word}</span>',
                 _ms(r.runtime_ms), _ms(r.eager_ms), _ms(r.compile_ms), _x(r.speedup_vs_eager),
                 _x(r.speedup_vs_compile), _ms(r.floor_ms), str(r.custom_kernels), str(r.rounds),
                 f"{r.wall_s:.0f}", escape(r.skill_won or ""), ran_on(r),
                 f"{_link(r.solution, 'solution')} {_link(r.report, 'attempts')}"]
        num = {4, 5, 6, 7, 8, 9, 10, 11, 12}
        out.append("<tr>" + "".join(f'<td class="n">{c}</td>' if i in num else f"<td>{c}</td>"
                                    for i, c in enumerate(cells)) + "</tr>")
    return "".join(out) + "</tbody></table>"


def summary_table(summary: Summary) -> str:
    head = "".join(f'<th>{escape(g)}</th>' for g in ["metric", *summary.groups])
    body = "".join("<tr><td>" + escape(label) + "</td>"
                   + "".join(f'<td class="n">{escape(c)}</td>' for c in cells) + "</tr>"
                   for label, cells in table_rows(summary))
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render(rows: list[ResultRow], summary: Summary, settings: dict[str, object]) -> str:
    all_ = summary.groups.get(ALL)
    timed = bool(all_ and all_.gpu_timed)
    meta = " · ".join(f"{k} {escape(str(v))}" for k, v in settings.items() if v not in (None, "", []))
    gpus = ", ".join(summary.gpus) or ("CPU (Triton interpreter)" if not timed else "?")
    cpu_note = "" if timed else ('<p class="note">CPU bench: correctness is real; timings are CPU timings '
                                 "and never reported as speedups.</p>")
    figures = [
        ("Speedup vs eager PyTorch", speedup_figure(rows, "eager", "eager")),
        ("Speedup vs torch.compile", speedup_figure(rows, "compile", "torch.compile")),
        ("Per category", category_figure(rows)),
        ("Roofline: achieved time vs speed-of-light floor", roofline_figure(rows)),
        ("Wall time and rounds per problem", time_figure(rows)),
        ("Skills tried and how often they won", skills_figure(rows)),
    ]
    parts = [f"<h2>{escape(t)}</h2><figure>{svg}</figure>" for t, svg in figures]
    total = sum(r.wall_s for r in rows)
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>kernelskill bench</title>'
            f'<link rel="icon" href="data:,"><style>{CSS}</style></head><body>'
            f"<h1>kernelskill bench: {plural(len(rows), 'problem')}</h1>"
            f'<p class="meta">{meta}<br>timed on {escape(gpus)} · '
            f"{math.ceil(total / 60)} min of problem time · written {time.strftime('%Y-%m-%d %H:%M')}"
            f"{'<br>' + ran if (ran := placement_note(rows)) else ''}</p>"
            f"{cpu_note}"
            f"<h2>Summary</h2>{summary_table(summary)}{''.join(parts)}"
            f"<h2>Problems</h2>{problem_table(rows)}</body></html>")


def write_report(bench_dir: Path, rows: list[ResultRow], summary: Summary,
                 settings: dict[str, object]) -> Path:
    path = bench_dir / REPORT
    write_atomic(path, render(rows, summary, settings))
    return path

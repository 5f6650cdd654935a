"""`kernelskill skills list|show ID|search TEXT|stats`, each with --json.

The main CLI registers it with `add_skills_parser(subparsers)` and calls `args.func(args)`,
which returns the exit code: 0, or 2 after one line on stderr for an error a user can hit.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from ..state.state_db import StateDBError
from .index import SkillIndex, cache_home
from .library import default_skills_dir, load_skills
from .schema import SkillError
from .stats_sql import open_stats

# Each subcommand's --help ends with one example.
EXAMPLES = {"skills": "kernelskill skills search fuse a matmul epilogue -k 3",
            "list": "kernelskill skills list --json", "show": "kernelskill skills show gemm-epilogue-fusion",
            "search": "kernelskill skills search memory-bound row-reduction softmax -k 3",
            "stats": "kernelskill skills stats"}


def add_skills_parser(subparsers: argparse._SubParsersAction,
                      formatter_class: type[argparse.HelpFormatter] = argparse.RawDescriptionHelpFormatter
                      ) -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="machine-readable output")
    common.add_argument("--skills-dir", type=Path, default=None, help="skill library (default: repo skills/)")
    common.add_argument("--index-dir", type=Path, default=None,
                        help="Chroma folder (default: $XDG_CACHE_HOME/kernelskill/skill_index)")
    common.add_argument("--stats-path", type=Path, default=None,
                        help="experience table (default: $XDG_CACHE_HOME/kernelskill/skill_stats.json)")
    common.add_argument("--state-db", default=None, metavar="URL",
                        help="read the experience statistics of a team's database instead "
                             "(postgresql://USER@HOST:PORT/DB, as optimize and bench --state-db write them); "
                             "a sqlite:// URL keeps the JSON table (default: none: the JSON table)")
    def fmt(name: str) -> dict[str, object]:
        return {"formatter_class": formatter_class, "epilog": f"example:\n  {EXAMPLES[name]}"}

    parser = subparsers.add_parser("skills", help="browse, search and score the optimization skill library",
                                   **fmt("skills"))
    sub = parser.add_subparsers(dest="skills_command", required=True, metavar="{list,show,search,stats}")
    sub.add_parser("list", parents=[common], help="all skills: id, kind, structures, title", **fmt("list"))
    show = sub.add_parser("show", parents=[common], help="one skill: front matter and body", **fmt("show"))
    show.add_argument("skill_id", metavar="ID")
    search = sub.add_parser("search", parents=[common],
                            help="rank skills for a profile signature or free text", **fmt("search"))
    search.add_argument("text", nargs="+", metavar="TEXT")
    search.add_argument("-k", type=int, default=5, help="how many hits (default 5)")
    search.add_argument("--allow-tf32", action="store_true",
                        help="the run's precision policy is tf32 (TF32 matmuls; default and strict keep "
                             "matmuls fp32)")
    search.add_argument("--inference", action="store_true", help="the model runs in eval mode")
    search.add_argument("--guardrails", action="store_true", help="include guardrail skills in the ranking")
    sub.add_parser("stats", parents=[common], help="experience table: tries, wins, mean gain per skill, "
                   "variant and device", **fmt("stats"))
    parser.set_defaults(func=run_skills_command)
    return parser


def _emit(args: argparse.Namespace, data: object, lines: list[str]) -> None:
    print(json.dumps(data, indent=1) if args.json else "\n".join(lines))


def _list(args: argparse.Namespace) -> None:
    skills = load_skills(args.skills_dir or default_skills_dir())
    data = [{"id": s.id, "title": s.title, "kind": s.kind, "structures": s.structures,
             "bottlenecks": s.bottlenecks} for s in skills.values()]
    width = max((len(s.id) for s in skills.values()), default=2)
    lines = [f"{s.id:<{width}}  {s.kind:<9}  {s.title}  [{', '.join(s.structures)}]" for s in skills.values()]
    _emit(args, data, lines + [f"{len(skills)} skills"])


def _show(args: argparse.Namespace) -> None:
    skills = load_skills(args.skills_dir or default_skills_dir())
    if args.skill_id not in skills:
        raise SkillError(f"unknown skill id {args.skill_id!r}; `kernelskill skills list` shows the ids")
    skill = skills[args.skill_id]
    data = {**skill.front_matter(), "body": skill.body, "path": str(skill.path)}
    _emit(args, data, [f"# {skill.title} ({skill.id}, {skill.kind})", f"file: {skill.path}",
                       f"structures: {', '.join(skill.structures)}",
                       f"bottlenecks: {', '.join(skill.bottlenecks)}", f"triggers: {skill.triggers}", "",
                       skill.body.rstrip()])


def _index(args: argparse.Namespace) -> SkillIndex:
    return SkillIndex(args.skills_dir, args.index_dir, args.stats_path, state_db=args.state_db)


def _search(args: argparse.Namespace) -> None:
    if args.k < 1:
        raise SkillError("-k must be at least 1")
    hits = _index(args).query(" ".join(args.text), k=args.k, allow_tf32=args.allow_tf32,
                              training=not args.inference, include_guardrails=args.guardrails)
    data = [{"id": h.id, "title": h.title, "score": h.score, "similarity": h.similarity,
             "reason": h.reason, "kind": h.skill.kind} for h in hits]
    lines = []
    for rank, h in enumerate(hits, 1):
        lines += [f"{rank:>2}. {h.score:6.3f}  {h.id}  {h.title}", f"    {h.reason}"]
    _emit(args, data, lines or ["no skill passes the preconditions for this query"])


def _stats(args: argparse.Namespace) -> None:
    records = open_stats(args.stats_path or cache_home() / "skill_stats.json", args.state_db).records()
    data = [{**r.model_dump(mode="json"), "mean_gain": r.mean_gain,
             "device": r.gpu if r.timed else "cpu (interpreter: tries only, no timing)"} for r in records]
    lines = [f"{'skill':<34} {'structure':<18} {'device':<12} {'tries':>5} {'wins':>5} {'gain':>6}  variant"]
    for r in records:
        gain = f"{r.mean_gain:.2f}x" if r.mean_gain is not None else "-"
        wins = str(r.wins) if r.timed else "-"
        lines.append(f"{r.skill_id:<34} {r.structure:<18} {r.gpu:<12} {r.tries:>5} {wins:>5} {gain:>6}  "
                     f"{r.variant or '(any)'}")
    if any(not r.timed for r in records):
        lines.append("cpu rows: timed by Triton's interpreter, so they count tries only, never wins or gains")
    _emit(args, data, lines if records else ["no outcomes recorded yet"])


COMMANDS = {"list": _list, "show": _show, "search": _search, "stats": _stats}


def run_skills_command(args: argparse.Namespace) -> int:
    try:
        COMMANDS[args.skills_command](args)
    except (SkillError, StateDBError, ValueError) as exc:
        print(f"kernelskill skills: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `kernelskill skills show X | head`: the reader left, that is fine
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def main(argv: list[str] | None = None) -> int:
    """Standalone entry (`python -m kernelskill.skill_index.cli skills ...`)."""
    parser = argparse.ArgumentParser(prog="kernelskill")
    add_skills_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())

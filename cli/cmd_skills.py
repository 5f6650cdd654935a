"""`kernelskill skills list|show|search|stats`: the skill library (see skill_index/cli.py)."""

from __future__ import annotations

import argparse


def parse_args(argv: list[str]) -> argparse.Namespace:
    """skill_index/cli.py registers `skills` under a subparsers object; give it one."""
    from ..skill_index.cli import add_skills_parser
    from .main import HelpFormatter

    top = argparse.ArgumentParser(prog="kernelskill")
    add_skills_parser(top.add_subparsers(dest="command"), HelpFormatter)
    return top.parse_args(["skills", *argv])


def run(args: argparse.Namespace) -> int:
    from ..skill_index.cli import run_skills_command

    return run_skills_command(args)

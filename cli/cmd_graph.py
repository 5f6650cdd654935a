"""`kernelskill graph --mermaid`: the agent graph as LangGraph draws it."""

from __future__ import annotations

import argparse

EXAMPLES = ("kernelskill graph --mermaid > graph.mmd",)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mermaid", action="store_true", help="print the Mermaid drawing (the default)")
    p.add_argument("--ascii", action="store_true", help="print an ASCII drawing instead")


def run(args: argparse.Namespace) -> int:
    from ..graph.build import build_graph

    drawable = build_graph().get_graph()
    print(drawable.draw_ascii() if args.ascii else drawable.draw_mermaid())
    return 0

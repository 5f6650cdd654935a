"""build_graph(): the five agents and finalize as LangGraph nodes with conditional edges.

    START -> generator -> reviewer --error/wrong--> repairer -> reviewer
                            |                        (repairs spent -> planner)
                            +--correct--> profiler -> planner --skill--> generator
                                                            \\--nothing left--> finalize -> END

A round is one plan: the generator builds one candidate per planned variant of the chosen skill
and the reviewer judges them together, keeping the best; a failing one takes the repair edge.

The CLI and the served graph (langgraph.json -> `graph`) are the same compiled graph; only the
checkpointer differs (SQLite for the CLI, the server's own when served).
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph

from ..nodes.finalize import finalize
from ..nodes.generator import generator
from ..nodes.planner import planner
from ..nodes.profiler import profiler
from ..nodes.repairer import repairer
from ..nodes.reviewer import reviewer
from ..state.graph_state import GraphState
from . import routing


def build_graph(checkpointer: Any = None) -> Any:
    g = StateGraph(GraphState)
    for name, fn in (("generator", generator), ("reviewer", reviewer), ("repairer", repairer),
                     ("profiler", profiler), ("planner", planner), ("finalize", finalize)):
        g.add_node(name, fn)
    g.add_edge(START, "generator")
    g.add_conditional_edges("generator", routing.after_generator, ["reviewer", "planner", "finalize"])
    g.add_conditional_edges("reviewer", routing.after_review, ["profiler", "repairer", "planner", "finalize"])
    g.add_conditional_edges("repairer", routing.after_repair, ["reviewer", "planner", "finalize"])
    g.add_edge("profiler", "planner")
    g.add_conditional_edges("planner", routing.after_plan, ["generator", "finalize"])
    g.add_edge("finalize", END)
    return g.compile(checkpointer=checkpointer)

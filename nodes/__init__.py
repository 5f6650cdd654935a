"""One module per agent node: generator, reviewer, profiler, planner, repairer, finalize.

Each node is a function (state) -> partial state update; where the graph goes next is decided
by the pure routing functions in graph/routing.py, never by a node's side effects.
"""

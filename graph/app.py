"""The served graph (langgraph.json points here): the same build_graph(), the server's checkpointer."""

from kernelskill.graph.build import build_graph

graph = build_graph()

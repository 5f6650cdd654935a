"""The served graph (langgraph.json points here): the same build_graph(), the server's checkpointer,
and the experience statistics in the server's database when it has one (served.py). `checkpointer`
is langgraph.postgres.json's: `langgraph dev` then checkpoints in that PostgreSQL too."""

from kernelskill.graph.build import build_graph
from kernelskill.graph.served import checkpointer, use_server_database

__all__ = ["checkpointer", "graph"]

use_server_database()
graph = build_graph()

"""The StateGraph: build_graph() (build.py), the routing functions, the runner; app.py is what
langgraph.json serves."""

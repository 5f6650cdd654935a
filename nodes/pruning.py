"""The delivered file ships only what it runs: finalize prunes the best candidate to the Triton
kernels its verified run launched (authors/prune.py) and verifies the pruned file with the
evaluator before delivering it; when pruning or that verification fails, the unpruned file is
delivered and the report says why."""

from __future__ import annotations

import ast
from collections.abc import Callable

from ..authors.prune import PruneError, prune
from ..eval.problem import ProblemError, apply_size
from ..state.graph_state import GraphState, Pruning, Verdict
from ..state.output import plural
from ..state.records import Candidate


def pruning_of_best(state: GraphState) -> Pruning | None:
    """Finalize's pruning when it belongs to the current best candidate."""
    p, best = state.pruning, state.best
    return p if p is not None and best is not None and p.of_hash == best.hash else None


def kernel_skills(candidate: Candidate | None, kernels: list[str]) -> dict[str, str]:
    """Each kernel -> the skill (template) it came from, as the built-in author recorded it at
    emission; a kernel it did not record (an LLM author's) is credited to the candidate's skill or
    author. The one place the header's provenance reads the candidate's author state."""
    if candidate is None:
        return {}
    known = candidate.author_state.kernel_skills
    other = candidate.skill_id or f"{candidate.author} author"
    return {k: known.get(k, other) for k in kernels}


def where_verified(state: GraphState) -> str:
    """The shapes the evaluator ran: the problem's integer size constants at the run's size, on
    its device, e.g. '01_linear_gelu_scale at small sizes (BATCH=37, IN_FEATURES=65) on cpu'."""
    s = state.settings
    try:
        tree = ast.parse(apply_size(state.problem.source, s.size, state.problem.path))
    except (ProblemError, SyntaxError):
        tree = ast.Module(body=[], type_ignores=[])
    sizes = [f"{n.targets[0].id}={n.value.value}" for n in tree.body
             if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
             and isinstance(n.value, ast.Constant) and type(n.value.value) is int]
    return (f"{state.problem.name} at {s.size} sizes" + (f" ({', '.join(sizes)})" if sizes else "")
            + f" on {s.device}")


def _lines(source: str) -> int:
    return len(source.splitlines())


def prune_best(state: GraphState, verdict: Verdict,
               evaluate: Callable[..., Verdict]) -> tuple[Pruning, Verdict | None]:
    """(what pruning did, the pruned file's verdict when it is the one to deliver). `evaluate` is
    the reviewer's evaluate_candidate (passed in, so finalize's callers and tests see one seam)."""
    best = state.best
    assert best is not None
    where = where_verified(state)
    base = {"of_hash": best.hash, "verified_for": where, "kernels": list(verdict.kernel_names),
            "lines_before": _lines(best.source), "bytes_before": len(best.source.encode())}
    try:
        pruned = prune(best.source, verdict.kernel_names, where)
    except PruneError as e:
        return Pruning(**base, note=f"not pruned: {e}"), None
    if pruned.source == best.source:
        return Pruning(**base, note="nothing to prune: the file runs all it defines"), None
    v = evaluate(state, pruned.source, baselines=state.settings.baselines)
    if not v.correct:
        return Pruning(**base, note=f"the pruned file failed its evaluation at {v.stage} ({v.reason}); "
                                    "the unpruned file is delivered"), None
    if sorted(v.kernel_names) != sorted(verdict.kernel_names):
        return Pruning(**base, note=f"the pruned file launched {v.kernel_names}, not {verdict.kernel_names}; "
                                    "the unpruned file is delivered"), None
    return Pruning(**base, applied=True, source=pruned.source, removed=pruned.removed, raises=pruned.raises,
                   lines_after=_lines(pruned.source), bytes_after=len(pruned.source.encode()),
                   note=f"pruned to the {plural(len(pruned.kernels), 'kernel')} launched when verified for "
                        f"{where}; {plural(pruned.raises, 'path')} other shapes take raise RuntimeError"), v

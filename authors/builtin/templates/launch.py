"""Writing calls into the shared runtime (runtime/common.py): launch-plan keys and lookups, and the
one `@triton.autotune` decorator every template emits."""

from __future__ import annotations

from typing import Any

# Rationale: Triton's autotuner otherwise re-benchmarks every configuration in every process (the
# reviewer's evaluation, the final timing, a user's run of the saved solution), and its pick among
# close configurations varies between processes. `cache_results` keeps the pick on disk in
# Triton's cache, keyed by the kernel's source, the GPU target, the tuning key (the problem's
# sizes) and the argument dtypes: the tuned choice is measured once and reused. The argument
# exists from Triton 3.4 on, so the generated file passes it only there (`_TUNE`).
TUNE_CACHE = "**_TUNE"


def plan_key(operands: list[str]) -> str:
    """Generated expression of a launch-plan key (see _meta_ops): shape, strides, dtype and device
    of each operand, metadata only, so a cache keyed by it never keys on data."""
    return "(" + ", ".join(f"{o}.shape, {o}.stride(), {o}.dtype, {o}.device" for o in operands) + ",)"


def plan_lookup(plans: str, lname: str, n_ops: int) -> list[str]:
    """Launcher lines that fetch the launch plan of `ops` from the cache `plans`, planning a new
    signature once on meta tensors (runtime _new_plan); where the layout copies operands, each
    call plans on its own (`{lname}_plan(ops, device)` returns the plan and the laid-out ops)."""
    return [f"    key = {plan_key([f'ops[{j}]' for j in range(n_ops)])}",
            f"    plan = {plans}.get(key)",
            "    if plan is None:",
            f"        plan = _new_plan({plans}, key, {lname}_plan)",
            "    if not plan:  # the layout materialises operands: planned per call on the real ones",
            f"        plan, ops = {lname}_plan(ops, key[3])"]


def autotune(configs: list[tuple[dict[str, Any], int, int]], key: list[str]) -> str:
    """`@triton.autotune` over `_configs(configs)` keyed by `key`, then `@triton.jit`, as generated
    source (the file defines `_configs` and `_TUNE`: COLLAPSE)."""
    return f"@triton.autotune(configs=_configs({configs!r}), key={key!r}, {TUNE_CACHE})\n@triton.jit\n"

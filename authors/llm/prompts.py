"""The LLM author's prompts: one system contract and three task messages (generate, apply, repair).

Templates are module-level strings filled by small functions, so a reader sees the whole prompt
in one place. Long sources, skill texts and errors are clipped with a visible marker: a prompt
must fit a small local model's context as well as a large hosted one.
"""

from __future__ import annotations

import ast

from ...state.records import Attempt, Plan
from ..base import AuthorTask, SkillText

# Rationale: 12k characters is about 3k tokens; with the skill, the template and the log an apply
# prompt stays under ~8k tokens, the context of the small local models we test against.
SOURCE_CHARS = 12_000
SKILL_CHARS = 4_000
TEMPLATE_CHARS = 6_000
ERROR_CHARS = 3_000
LOG_ATTEMPTS = 16
LINE_CHARS = 160

SYSTEM = """\
You are an expert GPU kernel engineer. You rewrite a PyTorch module as an exactly equivalent,
faster module built on custom Triton kernels.

Contract for every file you write:
- One complete, standalone Python file defining `class ModelNew(nn.Module)`. It is imported on its
  own: copy in any constant or helper it needs from the problem file.
- `ModelNew.__init__` takes the same arguments as `Model.__init__` and creates the same parameters
  and buffers in the same order with the same shapes, so seeded weights come out identical.
- `forward` takes the same arguments and returns the same outputs (shapes, dtypes, tuple structure).
- The work runs in `@triton.jit` kernels launched from `forward`; PyTorch is for glue (allocation,
  views, shapes) and for ops you have not replaced yet.
- {precision}
- {device}

The evaluator rejects, before running anything, a file that:
- wraps the custom path in try/except or falls back to PyTorch on failure;
- uses, subclasses or instantiates the reference `Model`, or imports the problem file;
- caches outputs (data_ptr, id, call counters, memoisation) or skips work on repeated inputs;
- uses threads, processes, other CUDA streams, or patches timers or torch.cuda.synchronize;
- uses exec, eval, compile, open, importlib, pickle, files or the network;
- changes global torch state (seeds, default dtype, backend or matmul precision flags).
Outputs are compared with a float64 reference on several random inputs, including negative and
rescaled ones (fp32: atol = rtol = 1e-4); outputs are poisoned with NaN first, so every element must
be written, and inputs must not be modified.

Reply with the complete file in one ```python block, then one sentence on what you did."""

STRICT_FP32 = ("Precision (policy `strict`): the problem is fp32 and TF32 is not allowed. Compute in fp32: "
               "no fp16/bf16 casts; every tl.dot passes input_precision=\"ieee\" (exact) or "
               "input_precision=\"tf32x3\" (error-compensated, fp32 accuracy); no `a @ b` inside kernels. "
               "The evaluator runs PyTorch ops (reference and yours) with TF32 off: set no flags.")
DEFAULT = ("Precision (policy `default`, PyTorch's own flags): PyTorch convolutions left in forward run in "
           "TF32 as eager's cuDNN does (set no flags); every tl.dot stays fp32-accurate, as eager's matmuls "
           "are: input_precision=\"ieee\" or \"tf32x3\"; no `a @ b` inside kernels; no fp16/bf16 casts.")
TF32 = ("Precision (policy `tf32`): TF32 is allowed for this run (tl.dot may use its default precision); "
        "fp16/bf16 casts of fp32 data are still not allowed.")
PRECISION = {"strict": STRICT_FP32, "default": DEFAULT, "tf32": TF32}
ON_CUDA = "Device: inputs and weights live on an NVIDIA GPU; launch kernels on the inputs' device."
ON_CPU = ("Device: this run has no GPU. Inputs are CPU tensors and Triton kernels run under the Triton "
          "interpreter (TRITON_INTERPRET=1): launch them on the CPU tensors as usual, keep them simple, "
          "and call no torch.cuda API.")

GENERATE = """\
Write the first ModelNew for this problem: replace the forward's computation with Triton kernels.

## Problem (the reference `Model`, `get_inputs()` gives the forward arguments)
```python
{problem}
```

## Skeleton to fill in
```python
{skeleton}
```"""

APPLY = """\
Apply exactly one optimization to the best candidate so far: skill `{skill_id}`{title}.
{plan}
Profile of the best candidate: {signature}

## The skill
{body}
{template}
## Best candidate so far ({best_state})
```python
{best}
```

## Problem (the reference)
```python
{problem}
```

## Attempts so far
{log}

Write the best candidate with this one optimization applied, complete and correct."""

TEMPLATE = """
### The skill's template (what a code generator instantiates; adapt it to this problem)
```python
{template}
```
"""

REPAIR = """\
This candidate failed the evaluator. Find the cause in the error and fix it; keep what works.

## Error
```
{error}
```

## Failing candidate
```python
{candidate}
```
{skill}
## Problem (the reference)
```python
{problem}
```

## Attempts so far
{log}

Write the corrected file, complete."""

RETRY = """\
Your reply could not be used: {why}.
Reply with the complete file in one ```python block that defines `class ModelNew(nn.Module)`."""


def clip(text: str, limit: int, keep_tail: bool = False) -> str:
    """`text` within `limit` characters; the cut is marked. Errors keep their tail (the traceback's
    last frames and the message), sources keep head and tail."""
    if len(text) <= limit:
        return text
    cut = len(text) - limit
    marker = f"\n... [{cut} characters cut] ...\n"
    if keep_tail:
        return marker.lstrip("\n") + text[-limit:]
    head = limit * 2 // 3
    return text[:head] + marker + text[len(text) - (limit - head):]


def _speed(a: Attempt) -> str | None:
    if a.speedup_vs_eager is not None:
        return f"{a.speedup_vs_eager:.2f}x vs eager"
    return f"{a.runtime_ms:.3g} ms" if a.runtime_ms is not None else None


def render_attempt(a: Attempt) -> str:
    """One short line per attempt: round, node, skill, outcome, speed, error excerpt."""
    parts = [f"round {a.round}", a.node, a.skill_id or "-", a.outcome]
    speed = _speed(a)
    if speed:
        parts.append(speed)
    line = " | ".join(parts)
    if a.error:
        first = " ".join(a.error.split())
        line += f" | {first}"
    return line if len(line) <= LINE_CHARS else line[:LINE_CHARS - 3] + "..."


def render_log(attempts: list[Attempt]) -> str:
    if not attempts:
        return "(none yet)"
    shown = attempts[-LOG_ATTEMPTS:]
    skipped = len(attempts) - len(shown)
    lines = [f"({skipped} earlier attempts not shown)"] if skipped else []
    return "\n".join(lines + [f"- {render_attempt(a)}" for a in shown])


def skeleton(problem_source: str) -> str:
    """A ModelNew outline with the reference's constructor and forward signatures."""
    init, fwd = "self", "self"
    try:
        tree = ast.parse(problem_source)
    except SyntaxError:
        tree = ast.Module(body=[], type_ignores=[])
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            for f in node.body:
                if isinstance(f, ast.FunctionDef) and f.name in ("__init__", "forward"):
                    args = ast.unparse(f.args)
                    init, fwd = (args, fwd) if f.name == "__init__" else (init, args)
    return (f"import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n\n\n"
            f"@triton.jit\ndef my_kernel(...):\n    ...\n\n\nclass ModelNew(nn.Module):\n"
            f"    def __init__({init}):\n        super().__init__()\n"
            f"        ...  # the same parameters as Model, in the same order\n\n"
            f"    def forward({fwd}):\n        ...  # launch the kernel(s), return the outputs\n")


def system_prompt(task: AuthorTask) -> str:
    return SYSTEM.format(precision=PRECISION[task.precision],
                         device=ON_CUDA if task.device == "cuda" else ON_CPU)


def generate_prompt(task: AuthorTask) -> str:
    src = task.problem.source
    return GENERATE.format(problem=clip(src, SOURCE_CHARS), skeleton=skeleton(src))


def _skill_parts(skill: SkillText | None) -> tuple[str, str, str]:
    """(title suffix, body, template section) of the skill, clipped."""
    if skill is None:
        return "", "(no description available)", ""
    title = f" ({skill.title})" if skill.title else ""
    body = clip(skill.body.strip(), SKILL_CHARS) or "(no description available)"
    template = ""
    if skill.template.strip():
        template = TEMPLATE.format(template=clip(skill.template, TEMPLATE_CHARS))
    return title, body, template


def apply_prompt(task: AuthorTask, plan: Plan) -> str:
    title, body, template = _skill_parts(task.skill)
    lines = []
    if plan.params:
        lines.append(f"Parameters: {', '.join(f'{k}={v!r}' for k, v in sorted(plan.params.items()))}.")
    if plan.reason:
        lines.append(f"Why the planner chose it: {plan.reason}")
    best = task.best.source if task.best else task.problem.source
    timed = [_speed(a) for a in task.attempts
             if task.best and a.source_hash == task.best.hash and a.outcome == "correct"]
    state = "correct" + (f", {timed[-1]}" if timed and timed[-1] else "")
    return APPLY.format(skill_id=plan.skill_id, title=title, plan="\n".join(lines),
                        signature=task.profile.signature if task.profile and task.profile.signature else
                        "(no profile)", body=body, template=template, best_state=state,
                        best=clip(best, SOURCE_CHARS), problem=clip(task.problem.source, SOURCE_CHARS),
                        log=render_log(task.attempts))


def repair_prompt(task: AuthorTask) -> str:
    skill = ""
    if task.skill is not None:
        title, body, _ = _skill_parts(task.skill)
        skill = f"\n## The skill this candidate applies: `{task.skill.id}`{title}\n{body}\n"
    candidate = task.current.source if task.current else "(the author produced no candidate)"
    return REPAIR.format(error=clip((task.error or "unknown failure").strip(), ERROR_CHARS, keep_tail=True),
                         candidate=clip(candidate, SOURCE_CHARS), skill=skill,
                         problem=clip(task.problem.source, SOURCE_CHARS), log=render_log(task.attempts))


def retry_prompt(why: str) -> str:
    return RETRY.format(why=why.rstrip("."))

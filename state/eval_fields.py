"""State records that keep the evaluator's result fields take them from eval.types.EvalResult.

The evaluator declares each field once (a standard-library dataclass: eval/ runs on bare GPU
hosts without pydantic); Verdict and Attempt keep a named subset of those fields, with
EvalResult's types and defaults, instead of a second declaration that could drift from it. The
field names, order and defaults are what they were, so checkpoints and report.json keep their
shape.
"""

from __future__ import annotations

from dataclasses import MISSING, fields
from typing import Any, get_type_hints

from pydantic import BaseModel, Field, create_model

from ..eval.types import EvalResult

_FIELDS = {f.name: f for f in fields(EvalResult)}
_TYPES = get_type_hints(EvalResult)


def eval_result_model(name: str, names: tuple[str, ...], base: type[BaseModel] = BaseModel,
                      **defaults: Any) -> type[BaseModel]:
    """A pydantic model (subclassing `base`) with the named EvalResult fields, in that order;
    `defaults` overrides a field's default (`...`: required)."""
    wrong = sorted({n for n in names if n not in _FIELDS} | (set(defaults) - set(names)))
    if wrong:
        raise ValueError(f"{name}: {', '.join(wrong)}: not among the EvalResult fields it keeps")
    spec: dict[str, Any] = {}
    for n in names:
        f = _FIELDS[n]
        if n in defaults:
            default = defaults[n]
        elif f.default_factory is not MISSING:
            default = Field(default_factory=f.default_factory)
        else:
            default = f.default
        spec[n] = (_TYPES[n], default)
    return create_model(name, __base__=base, **spec)

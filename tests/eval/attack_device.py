"""The device the evaluator's adversarial tests judge their candidates on.

test_adversarial.py, test_timing_holes.py, test_correctness_holes.py, test_code_holes_runtime.py
and test_boundary.py run the real evaluator on the CPU (Triton's interpreter) by default;
KS_ATTACK_DEVICE=cuda runs the same attacks against the GPU judge (tests/gpu/attacks_call.sh).
Their unit tests on fake workers and plain tensors keep "cpu": arithmetic, the same anywhere.
"""

from __future__ import annotations

import os

import pytest
import torch

DEVICE = os.environ.get("KS_ATTACK_DEVICE", "cpu")
if DEVICE not in ("cpu", "cuda"):
    raise ValueError(f"KS_ATTACK_DEVICE={DEVICE!r}: use cpu or cuda")

_NO_GPU = DEVICE == "cuda" and not torch.cuda.is_available()
needs_device = pytest.mark.skipif(_NO_GPU, reason="KS_ATTACK_DEVICE=cuda but no CUDA GPU is visible")
"""The module's mark (`pytestmark = needs_device`): its attacks need the device they are run on."""


def cpu_only(reason: str) -> pytest.MarkDecorator:
    """Skip under KS_ATTACK_DEVICE=cuda: what the test asserts holds on the CPU only (`reason`).
    Without a GPU the module's own mark skips it, with its own reason."""
    return pytest.mark.skipif(DEVICE != "cpu" and not _NO_GPU, reason=f"CPU only: {reason}")

"""Test setup: without a CUDA GPU, Triton kernels run under its CPU interpreter.

The variable must be set before triton is first imported, so it is set here, at collection.
Tests that need a real GPU carry the `gpu` marker and are skipped on CPU-only machines.
"""

from __future__ import annotations

import os

import pytest
import torch
from hypothesis import settings

# CI (.ci/run) draws the same property-test examples on every run; elsewhere each run draws anew.
settings.register_profile("ci", derandomize=True, database=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

HAS_GPU = torch.cuda.is_available()
if not HAS_GPU:
    os.environ.setdefault("TRITON_INTERPRET", "1")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if HAS_GPU:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)

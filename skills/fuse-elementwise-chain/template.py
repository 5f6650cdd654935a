"""Executable template for this skill: one Triton kernel per chain of pointwise ops (the code
lives in authors/builtin/pointwise_template.py, shared by every family's epilogues)."""

from kernelskill.authors.builtin.pointwise_template import FusedElementwise

TEMPLATE = FusedElementwise()

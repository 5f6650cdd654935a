"""Executable template for this skill: one Triton kernel per chain of pointwise ops (the code
lives in authors/builtin/families/pointwise/template.py, shared by every family's epilogues)."""

from kernelskill.authors.builtin.templates.api import FusedElementwise

TEMPLATE = FusedElementwise()

"""Reductions over outer / strided dims with wide coalesced column tiles and a K split.

Column tiles [BLOCK_K, BLOCK_R] walk the contiguous kept dim (`imax` contiguous elements per
tile row, 1 KB for 256 fp32); when strips are too few for the GPU the reduced dim is split
across programs (`waves` programs per SM) and partials combined in a second pass.
"""

from __future__ import annotations

from kernelskill.authors.builtin.templates.api import (
    IndexReductionTemplate,
    ReductionTemplate,
    VariantTemplate,
    trailing,
)

TEMPLATE = VariantTemplate([IndexReductionTemplate(), ReductionTemplate()],
                           overrides={"imax": 256, "tile": 8192, "waves": 8},
                           params={"imax": [256, 128, 64], "tile": [8192, 4096, 16384], "waves": [8, 4, 16]},
                           applies=lambda region: not trailing(region))

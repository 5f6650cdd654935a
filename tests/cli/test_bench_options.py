"""`kernelskill bench --gpus`: indices parsed and checked against the visible GPUs, one line per mistake."""

from __future__ import annotations

import pytest
from kernelskill.cli.cmd_bench import parse_gpus


def test_parse_gpus() -> None:
    assert parse_gpus("0,2", 4) == [0, 2] and parse_gpus("3", 4) == [3]
    for text, visible, needle in (("0,a", 2, "comma-separated"), ("1,1", 2, "distinct"),
                                  ("-1", 2, "non-negative"), ("2", 2, "only 2 GPU"),
                                  ("0", 0, "no GPU is visible"), (",", 2, "distinct")):
        with pytest.raises(ValueError, match=needle):
            parse_gpus(text, visible)

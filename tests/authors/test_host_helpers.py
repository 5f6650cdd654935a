"""The launchers' host-side helpers (runtime/common.py, imported as a module), stand-ins for library calls
that cost microseconds per forward: `_bshape` for torch.broadcast_shapes (the same result or the same
refusal on any shapes), `_cdiv` and `_npow2` for triton.cdiv and triton.next_power_of_2."""

import pytest
import torch
import triton
from hypothesis import given, settings
from hypothesis import strategies as st
from kernelskill.authors.builtin.runtime.common import _bshape as bshape
from kernelskill.authors.builtin.runtime.common import _cdiv as cdiv
from kernelskill.authors.builtin.runtime.common import _npow2 as npow2

dims = st.sampled_from([0, 1, 1, 2, 3, 5])
shapes = st.lists(st.lists(dims, max_size=5).map(tuple), min_size=1, max_size=4)


@settings(deadline=None, max_examples=300)
@given(shapes)
def test_same_result_or_refusal_as_torch(ss: list[tuple[int, ...]]) -> None:
    try:
        want = torch.broadcast_shapes(*ss)
    except RuntimeError:
        with pytest.raises(RuntimeError):
            bshape(*ss)
        return
    got = bshape(*ss)
    assert got == want and isinstance(got, torch.Size)


def test_torch_sizes_and_empty_shapes() -> None:
    assert bshape(torch.Size([8, 1, 4]), torch.Size([3, 1])) == torch.Size([8, 3, 4])
    assert bshape((), ()) == torch.Size([])


@given(st.integers(0, 2**40), st.integers(1, 2**20))
def test_cdiv_is_tritons(a: int, b: int) -> None:
    assert cdiv(a, b) == triton.cdiv(a, b)


@given(st.integers(1, 2**40))
def test_npow2_is_tritons_for_block_sizes(n: int) -> None:
    assert npow2(n) == triton.next_power_of_2(n)
    assert npow2(0) == 1  # a block holds at least one element (triton's gives 0)

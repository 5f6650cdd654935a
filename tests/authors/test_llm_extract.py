"""Extraction of ModelNew from chat replies: every shape a model answers in, and the ones to reject."""

from __future__ import annotations

import ast

import pytest
from kernelskill.authors.base import AuthorError
from kernelskill.authors.llm.extract import ExtractionError, extract_code, prose_of

KERNEL = '''import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)
'''
CLASS = '''class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return out
'''
FILE = KERNEL + "\n\n" + CLASS


def fenced(code: str, tag: str = "python") -> str:
    return f"```{tag}\n{code}```"


def defines_modelnew(code: str) -> bool:
    return any(isinstance(n, ast.ClassDef) and n.name == "ModelNew" for n in ast.parse(code).body)


def test_one_fenced_block_with_prose_around() -> None:
    reply = f"Here is a fused ReLU kernel.\n\n{fenced(FILE)}\n\nIt launches one program per 1024 elements."
    assert extract_code(reply) == FILE


@pytest.mark.parametrize("tag", ["python", "py", "Python3", ""])
def test_language_tags(tag: str) -> None:
    assert extract_code(fenced(FILE, tag)) == FILE


def test_split_blocks_are_joined_in_reply_order() -> None:
    reply = f"First the kernel:\n{fenced(KERNEL)}\nThen the module:\n{fenced(CLASS)}"
    code = extract_code(reply)
    assert code.index("def relu_kernel") < code.index("class ModelNew")
    assert defines_modelnew(code) and "import triton" in code


def test_usage_example_and_other_languages_are_left_out() -> None:
    example = "model = ModelNew()\nprint(model(torch.randn(8)))\n"
    reply = f"{fenced(FILE)}\nUsage:\n{fenced(example)}\nInstall:\n{fenced('pip install triton', 'bash')}"
    assert extract_code(reply) == FILE


def test_revised_answer_wins_over_first_draft() -> None:
    draft = FILE.replace("BLOCK=1024", "BLOCK=128")
    reply = f"Draft:\n{fenced(draft)}\nBetter, with larger blocks:\n{fenced(FILE)}"
    assert extract_code(reply) == FILE


def test_plain_python_without_fences() -> None:
    assert extract_code(FILE) == FILE


def test_unfenced_code_with_prose_before_and_after() -> None:
    reply = f"Sure! Here is the implementation:\n\n{FILE}\nThis kernel is memory-bound and coalesced."
    assert extract_code(reply) == FILE


def test_reasoning_section_is_ignored() -> None:
    reply = f"<think>maybe class ModelNew should use ```python blocks```</think>\n{fenced(FILE)}"
    assert extract_code(reply) == FILE


@pytest.mark.parametrize("reply, why", [
    ("", "empty"),
    ("I cannot help with that.", "no code block and no `class ModelNew`"),
    (fenced("import torch\nprint(torch.ones(3))\n"), "no code block defines `class ModelNew`"),
    (fenced(FILE.replace("ModelNew", "FastModel")), "no code block defines `class ModelNew`"),
    ("\x00\x07}{garbage ]]] class", "no code block and no `class ModelNew`"),
])
def test_replies_without_modelnew_are_rejected(reply: str, why: str) -> None:
    with pytest.raises(ExtractionError, match=why) as info:
        extract_code(reply)
    assert isinstance(info.value, AuthorError)
    assert "\n" not in str(info.value)


def test_truncated_reply_is_rejected_even_where_the_rest_parses() -> None:
    cut = "Here it is:\n" + fenced(FILE)[: fenced(FILE).index("empty_like") + 5]  # ends `torch.empt`
    ast.parse(cut.split("```python\n")[1])  # what is left happens to be valid Python
    with pytest.raises(ExtractionError, match="cut off at the token limit"):
        extract_code(cut, truncated=True)
    with pytest.raises(ExtractionError, match="cut off"):
        extract_code(FILE[:-30], truncated=True)


def test_code_that_does_not_parse_is_still_a_candidate() -> None:
    broken = FILE.replace("return out", "return out)")  # the evaluator reports the line
    assert extract_code(fenced(broken)) == broken
    assert extract_code(f"Here:\n{broken}\nDone.") == f"{broken}\nDone.\n"  # nothing parses: as is


def test_parseable_version_is_preferred_over_a_later_broken_one() -> None:
    broken = FILE.replace("return out", "return out)")
    assert extract_code(f"{fenced(FILE)}\nOr:\n{fenced(broken)}") == FILE


def test_truncated_after_a_complete_class_keeps_the_complete_part() -> None:
    reply = f"```python\n{FILE}\n\nif __name__ == '__main__':\n    x = torch.randn("
    assert extract_code(reply, truncated=True) == FILE
    assert extract_code(FILE + "\nprint(ModelNew()(torch.ra", truncated=True) == FILE


def test_missing_closing_fence_is_fine_when_the_reply_was_complete() -> None:
    assert extract_code("```python\n" + FILE) == FILE


def test_truncated_second_version_falls_back_to_the_complete_first() -> None:
    reply = f"{fenced(FILE)}\nAn alternative:\n```python\n{FILE[:-40]}"
    assert extract_code(reply) == FILE
    assert extract_code(reply, truncated=True) == FILE


def test_modelnew_nested_in_a_function_is_rejected() -> None:
    nested = "import torch.nn as nn\n\ndef make():\n    class ModelNew(nn.Module):\n        pass\n"
    with pytest.raises(ExtractionError):
        extract_code(fenced(nested))


def test_prose_becomes_a_one_line_note() -> None:
    reply = f"{fenced(FILE)}\nFused the ReLU into one kernel. Second sentence."
    assert prose_of(reply) == "Fused the ReLU into one kernel."
    assert prose_of(FILE) == ""
    assert len(prose_of(fenced(FILE) + "word " * 100)) <= 120

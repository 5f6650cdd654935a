"""The LLM author against a scripted OpenAI-compatible server on 127.0.0.1: real Triton replies
judged by the real evaluator, repairs that see the error, retries, failures in one line, tokens."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from author_util import evaluate, problem
from fake_openai import FakeOpenAI, Scripted
from kernelskill.authors.base import AuthorError, AuthorTask, SkillText
from kernelskill.authors.llm import author as llm_author
from kernelskill.authors.llm.author import LLMAuthor, LLMAuthorError
from kernelskill.state.config import LLMConfig
from kernelskill.state.records import Attempt, Plan, Profile

PROBLEM = '''"""(x + y) * scale on two vectors."""

import torch
import torch.nn as nn

N = 1 << 20
SMALL = {"N": 1000}


class Model(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x, y):
        return (x + y) * self.scale


def get_inputs():
    return [torch.randn(N), torch.randn(N)]


def get_init_inputs():
    return [0.5]
'''

GOOD = '''import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_scale_kernel(x_ptr, y_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, (x + y) * scale, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x, y):
        x, y = x.contiguous(), y.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        add_scale_kernel[(triton.cdiv(n, BLOCK_SIZE),)](x, y, out, n, self.scale, BLOCK=BLOCK_SIZE)
        return out
'''
# Forgets the scale: compiles, runs, and is wrong on every input.
BROKEN = GOOD.replace("(x + y) * scale, mask=mask", "x + y, mask=mask")


def reply(code: str, block: int = 1024, prose: str = "One fused kernel: load, add, scale, store.") -> str:
    return f"Here is the kernel.\n\n```python\nBLOCK_SIZE = {block}\n\n{code}```\n\n{prose}"


def config(server: FakeOpenAI | None = None, **kw: object) -> LLMConfig:
    base = {"model": "scripted-coder", "base_url": server.base_url if server else None,
            "api_key_env": "KERNELSKILL_TEST_KEY", "timeout_s": 10.0, "retries": 2}
    return LLMConfig(**{**base, **kw})


def task(**kw: object) -> AuthorTask:
    return AuthorTask(problem=problem(PROBLEM, "add_scale"), device="cpu", **kw)


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(llm_author, "BACKOFF_S", 0.0)
    monkeypatch.delenv("KERNELSKILL_TEST_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def test_correct_kernel_on_the_first_try_passes_the_evaluator() -> None:
    with FakeOpenAI([reply(GOOD)]) as server:
        cand = LLMAuthor(config(server)).generate(task())
    assert cand.author == "llm" and "BLOCK_SIZE = 1024" in cand.source
    assert cand.note == "scripted-coder: first candidate: One fused kernel: load, add, scale, store."
    result = evaluate(PROBLEM, cand.source)
    assert result.correct, result.reason
    assert result.custom_kernels >= 1
    sent = server.requests[0]
    assert sent["model"] == "scripted-coder" and sent["temperature"] == 0.2
    system, user = sent["messages"][0]["content"], server.user_texts(0)
    assert sent["messages"][0]["role"] == "system"
    assert "class ModelNew" in system and 'input_precision="ieee"' in system and "interpreter" in system
    assert PROBLEM in user
    assert "def __init__(self, scale)" in user and "def forward(self, x, y)" in user  # the skeleton
    assert server.headers[0]["authorization"] == "Bearer not-needed"  # local server: placeholder key


def test_repair_prompt_carries_the_error_and_the_fix_passes() -> None:
    with FakeOpenAI([reply(BROKEN), reply(GOOD, prose="Multiply by scale before storing.")]) as server:
        author = LLMAuthor(config(server))
        first = author.generate(task())
        verdict = evaluate(PROBLEM, first.source)
        assert not verdict.correct and verdict.stage == "correctness"
        error = f"[{verdict.stage}] {verdict.reason}"
        failed = Attempt(round=0, node="generator", source_hash=first.hash, outcome="incorrect",
                         stage=verdict.stage, error=error)
        fixed = author.repair(task(current=first, error=error, attempts=[failed],
                                   skill=SkillText(id="fuse-elementwise-chain", title="Fuse a chain",
                                                   body="Fuse consecutive elementwise ops.")))
    prompt = server.user_texts(1)
    assert error in prompt and BROKEN in prompt.replace("BLOCK_SIZE = 1024\n\n", "")
    assert "round 0 | generator | - | incorrect | [correctness]" in prompt  # the attempts log
    assert "fuse-elementwise-chain" in prompt and "Fuse consecutive elementwise ops." in prompt
    assert fixed.note.endswith("repair: Multiply by scale before storing.")
    assert evaluate(PROBLEM, fixed.source).correct


def test_apply_prompt_carries_best_skill_template_and_profile() -> None:
    skill = SkillText(id="multi-row-blocks", title="Several rows per program",
                      body="Give each program BLOCK_ROWS rows.", template="def emit(region):\n    ...\n")
    profile = Profile(source="static", bottleneck="memory-bound", signature="memory-bound; pointwise; add")
    with FakeOpenAI([reply(GOOD), reply(GOOD, block=256)]) as server:
        best = LLMAuthor(config(server)).generate(task())
        cand = LLMAuthor(config(server)).apply(task(best=best, skill=skill, profile=profile),
                                               Plan(skill_id="multi-row-blocks", params={"BLOCK_ROWS": 4},
                                                    reason="pointwise rows"))
    prompt = server.user_texts(1)
    for part in ("multi-row-blocks", "Several rows per program", "Give each program BLOCK_ROWS rows.",
                 "def emit(region):", "memory-bound; pointwise; add", "BLOCK_ROWS=4", best.source.strip()):
        assert part in prompt, part
    assert cand.skill_id == "multi-row-blocks" and cand.params == {"BLOCK_ROWS": 4}
    assert "BLOCK_SIZE = 256" in cand.source


def test_unusable_replies_are_retried_then_give_an_author_error() -> None:
    garbage = Scripted(content="\x00}{]]] <|endoftext|> ### ~~~")
    replies = ["I'm sorry, I cannot write kernels.", "```python\nprint('hello')\n```", garbage]
    with FakeOpenAI(replies) as server, pytest.raises(LLMAuthorError) as info:
        LLMAuthor(config(server)).generate(task())
    msg = str(info.value)
    assert "\n" not in msg and "no usable reply from scripted-coder in 3 tries" in msg
    assert "no code block" in msg
    assert len(server.requests) == 3
    # Each retry quotes the bad reply and says what was wrong with it.
    retry = server.requests[1]["messages"]
    assert retry[-2] == {"role": "assistant", "content": "I'm sorry, I cannot write kernels."}
    assert "could not be used: the reply has no code block" in retry[-1]["content"]
    assert "no code block defines `class ModelNew`" in server.requests[2]["messages"][-1]["content"]
    assert info.value.tokens > 0


def test_a_bad_reply_then_a_good_one_recovers_and_counts_both() -> None:
    with FakeOpenAI([Scripted(content="no code here", prompt_tokens=100, completion_tokens=3),
                     Scripted(content=reply(GOOD), prompt_tokens=130, completion_tokens=200)]) as server:
        cand = LLMAuthor(config(server)).generate(task())
    assert cand.author_state.tokens == 433
    assert cand.author_state.prompt_tokens == 230 and cand.author_state.completion_tokens == 203
    assert cand.author_state.calls == 2


def test_token_counts_come_from_the_reply_usage() -> None:
    with FakeOpenAI([Scripted(content=reply(GOOD), prompt_tokens=1234, completion_tokens=321)]) as server:
        cand = LLMAuthor(config(server)).generate(task())
    assert cand.author_state.tokens == 1555
    assert cand.author_state.model == "scripted-coder"


def test_reply_cut_at_max_tokens_is_retried_with_the_reason() -> None:
    cut = Scripted(content=reply(GOOD)[:-80], finish_reason="length")  # inside forward, no closing fence
    with FakeOpenAI([cut, reply(GOOD)]) as server:
        cand = LLMAuthor(config(server, max_tokens=512)).generate(task())
    assert evaluate(PROBLEM, cand.source).correct
    assert "cut off at the token limit" in server.requests[1]["messages"][-1]["content"]
    assert server.requests[0]["max_tokens"] == 512  # servers that ignore max_completion_tokens


def test_server_errors_and_timeouts_are_retried() -> None:
    with FakeOpenAI([Scripted(status=503), Scripted(content=reply(GOOD), delay_s=2.0),
                     Scripted(raw=b"<html>proxy error</html>"), reply(GOOD)]) as server:
        cand = LLMAuthor(config(server, timeout_s=0.5, retries=3)).generate(task())
    assert "add_scale_kernel" in cand.source and len(server.requests) == 4


def test_a_rejected_key_fails_at_once_in_one_line() -> None:
    with FakeOpenAI([Scripted(status=401), reply(GOOD)]) as server, \
            pytest.raises(AuthorError, match="rejected the API key") as info:
        LLMAuthor(config(server)).generate(task())
    assert len(server.requests) == 1 and "\n" not in str(info.value)


def test_server_down_gives_a_one_line_author_error() -> None:
    with socket.socket() as s:  # a port nobody listens on: connection refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    with pytest.raises(AuthorError) as info:
        LLMAuthor(config(base_url=url)).generate(task())
    msg = str(info.value)
    assert "\n" not in msg and url in msg and "is the server running?" in msg and "3 tries" in msg


def test_no_key_and_no_server_is_an_actionable_error(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(AuthorError, match=r"set \$KERNELSKILL_TEST_KEY, or pass --base-url") as info:
        LLMAuthor(config())
    assert "\n" not in str(info.value)
    monkeypatch.setenv("KERNELSKILL_TEST_KEY", "sk-test")
    assert LLMAuthor(config()).endpoint.api_key == "sk-test"



def test_a_missing_key_is_said_before_the_chat_client_is_imported() -> None:
    # The CLI's author check (nodes.runtime.get_author) answers from the environment alone: the
    # chat client's imports (langchain, openai) took ~10 s on the 2-core machine before the line.
    code = ("import sys\n"
            "from kernelskill.authors.base import AuthorError\n"
            "from kernelskill.nodes.runtime import get_author\n"
            "from kernelskill.state.graph_state import RunSettings\n"
            "try:\n"
            "    get_author(RunSettings(author='llm'))\n"
            "except AuthorError as e:\n"
            "    print(e)\n"
            "print(sorted(m for m in ('langchain_openai', 'openai', 'langchain_core')\n"
            "             if m in sys.modules))\n")
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    lines = out.stdout.strip().splitlines()
    assert out.returncode == 0 and len(lines) == 2, out.stderr[-2000:]
    assert "needs a key or a local server" in lines[0] and lines[1] == "[]"


def test_base_url_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOpenAI([reply(GOOD)]) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("KERNELSKILL_TEST_KEY", "sk-local")
        LLMAuthor(config()).generate(task())
    assert server.headers[0]["authorization"] == "Bearer sk-local"


def test_any_skill_can_be_applied() -> None:
    author = LLMAuthor(config(base_url="http://127.0.0.1:9/v1"))
    assert author.name == "llm" and author.can_apply("gemm-split-k") and author.can_apply("made-up-skill")


@pytest.mark.slow
def test_the_graph_runs_the_llm_author_through_generate_repair_apply(tmp_path: Path) -> None:
    from kernelskill.graph.runner import run
    from kernelskill.nodes import runtime
    from kernelskill.state.config import KernelSkillConfig, PathsConfig
    from kernelskill.state.graph_state import RunSettings

    paths = PathsConfig(checkpoints=tmp_path / "threads.sqlite", skill_index=tmp_path / "index",
                        skill_stats=tmp_path / "stats.json")
    # One variant per round: the fake server has one reply for the round (variants: test_variant_search).
    settings = RunSettings(device="cpu", size="small", author="llm", rounds=1, repairs=2, trials=2,
                           eval_timeout_s=300, baselines=False, variants=1)
    before, lines = runtime.config(), []
    with FakeOpenAI([reply(BROKEN), reply(GOOD)], default=reply(GOOD, block=256)) as server:
        runtime.set_config(KernelSkillConfig(llm=config(server), paths=paths))
        try:
            final = run(problem(PROBLEM, "add_scale"), settings, "t1", paths.checkpoints, tmp_path / "out",
                        say=lines.append)
        finally:
            runtime.set_config(before)
    steps = [(a.node, a.outcome) for a in final.attempts]
    assert steps == [("generator", "incorrect"), ("repairer", "correct"), ("generator", "correct")], lines
    assert final.attempts[2].skill_id and final.stop_reason == "round budget spent (1 round)"
    assert final.best is not None and final.best.author == "llm" and final.best.author_state.tokens > 0
    first_error_line = final.attempts[0].error.splitlines()[0]
    assert first_error_line in server.user_texts(1)  # the repairer saw the reviewer's error
    assert final.attempts[2].skill_id in server.user_texts(2)  # the generator applied the planned skill
    assert final.profile is not None and final.profile.signature in server.user_texts(2)
    solution = (tmp_path / "out" / "solution.py").read_text()
    assert solution.endswith(final.best.source) and "# precision policy: default" in solution

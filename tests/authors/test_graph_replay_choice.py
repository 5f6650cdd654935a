"""Which signatures replay a CUDA graph (runtime/graph_replay.py `_graph_faster`): the first call
times plain calls against replays and keeps replay only where it wins by _GRAPH_MARGIN. Checked on
the CPU with plain callables and a host clock in place of CUDA events, and the wrapped forward's
first call with torch.cuda faked: its trial runs leave no side effects."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable

import pytest
import torch
from kernelskill.authors.builtin.runtime.graph_replay import _GRAPH_MARGIN, _graph_faster


def _wall_ms(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1e3


def _sleeper(ms: float) -> Callable[[], None]:
    return lambda: time.sleep(ms / 1e3)


def test_replay_is_kept_where_it_is_faster() -> None:
    assert _graph_faster(_sleeper(5), _sleeper(2), clock=_wall_ms)


def test_plain_calls_are_kept_where_replay_is_slower() -> None:
    """The 66 us input copy on a forward that is not launch-bound: replay loses."""
    assert not _graph_faster(_sleeper(2), _sleeper(5), clock=_wall_ms)


def _returns(ms: float) -> Callable[[], float]:
    return lambda: ms


def _own(fn: Callable[[], float]) -> float:
    """A clock that reads each call's own duration: exact, so the rule itself is checked."""
    return fn()


def test_replay_must_win_by_the_margin() -> None:
    assert 0 < _GRAPH_MARGIN < 0.1
    assert not _graph_faster(_returns(1.0), _returns(1.0), clock=_own)  # a tie
    assert not _graph_faster(_returns(1.0), _returns(1.0 - _GRAPH_MARGIN / 2), clock=_own)  # within it
    assert _graph_faster(_returns(1.0), _returns(1.0 - 2 * _GRAPH_MARGIN), clock=_own)


def test_the_first_round_is_untimed_the_ways_alternate_and_the_best_decides() -> None:
    """The first call of each way pays one-time costs (a cold cache, a lazy allocation); later
    rounds take each way's minimum, so one slow call does not decide."""
    log: list[str] = []

    def way(name: str, *times: float) -> Callable[[], float]:
        it = iter(times)
        return lambda: (log.append(name), next(it))[1]

    # replay's untimed 100 and its 9.0 spike do not count, nor plain's untimed 0.1
    plain, replay = way("plain", 0.1, 1.0, 1.0, 1.0), way("replay", 100.0, 0.5, 9.0, 0.5)
    assert _graph_faster(plain, replay, _own, 3)
    assert log == ["plain", "replay"] * 4
    log.clear()
    # plain's best (0.4) beats replay's (0.5), whatever their untimed first calls took
    plain, replay = way("plain", 9.0, 1.0, 0.4, 1.0), way("replay", 0.01, 0.5, 0.5, 0.5)
    assert not _graph_faster(plain, replay, _own, 3)
    assert len(log) == 8


BN_DROPOUT = '''import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 6)
        self.bn = nn.BatchNorm1d(6)

    def forward(self, x):
        return nn.functional.dropout(self.bn(self.lin(x)), 0.5, True)
'''


class _Graph:
    """Stands in for torch.cuda.CUDAGraph; its capture (a null context) runs the forward eagerly."""

    def replay(self) -> None:
        pass


class _Event:
    def __init__(self, enable_timing: bool = False) -> None:
        self.t = 0.0

    def record(self) -> None:
        self.t = time.perf_counter()

    def synchronize(self) -> None:
        pass

    def elapsed_time(self, end: _Event) -> float:
        return (end.t - self.t) * 1e3


@pytest.mark.parametrize("replay_wins", [False, True])
def test_the_first_call_updates_buffers_and_draws_random_numbers_once(
        replay_wins: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The wrapped forward's first call of a signature on the CPU, with torch.cuda's graph, events
    and generator faked (the CPU generator stands in for the device's): its warm-up, capture and
    timing runs update a training-mode norm's statistics and draw dropout's numbers, and all of it
    is undone. Where plain calls win, the call then matches one eager call exactly (output,
    statistics, generator); where replay wins, the fake replay does nothing, so nothing is left."""
    from kernelskill.authors.builtin.templates.loader import load_templates

    monkeypatch.setattr(torch.cuda, "CUDAGraph", _Graph)
    monkeypatch.setattr(torch.cuda, "graph", lambda g: contextlib.nullcontext())
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(torch.cuda, "Event", _Event)
    monkeypatch.setattr(torch.cuda, "get_rng_state", lambda device=None: torch.get_rng_state())
    monkeypatch.setattr(torch.cuda, "set_rng_state", lambda state, device=None: None)
    ns: dict = {}
    exec(compile(load_templates()["cuda-graph-replay"].wrap(BN_DROPOUT, None), "<w>", "exec"), ns)  # noqa: S102
    timed = ns["_graph_faster"]

    def choose(plain: Callable[[], object], replay: Callable[[], object]) -> bool:
        timed(plain, replay)  # the real timing runs both ways: trials whose effects must be undone
        return replay_wins

    ns["_graph_ready"] = lambda args: True  # CPU tensors, as if on the device
    ns["_graph_faster"] = choose
    torch.manual_seed(0)
    model, ref = ns["ModelNew"](), ns["ModelNew"]()
    ref.load_state_dict(model.state_dict())
    start = [b.clone() for b in model.buffers()]
    x = torch.randn(5, 8)
    with torch.no_grad():
        torch.manual_seed(1)
        want, rng = ref._eager_forward(x), torch.get_rng_state()
        torch.manual_seed(1)
        before = torch.get_rng_state()
        got = model(x)
        entry = model._cuda_graphs[ns["_graph_signature"](model, (x,))]
        assert (entry is not False) == replay_wins
        if replay_wins:
            assert torch.equal(torch.get_rng_state(), before)
            assert all(torch.equal(a, b) for a, b in zip(model.buffers(), start, strict=True))
        else:
            assert torch.equal(got, want) and torch.equal(torch.get_rng_state(), rng)
            assert all(torch.equal(a, b) for a, b in zip(model.buffers(), ref.buffers(), strict=True))
            assert int(model.bn.num_batches_tracked) == 1

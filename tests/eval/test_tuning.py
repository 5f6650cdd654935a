"""Autotuning records carried between evaluations of a run (eval/judge/tuning.py): what crosses is
rebuilt from plain values, a link or a special file in the dead candidate's cache is never read,
a record lands only where Triton looks, and only a 'rank' evaluation gets them. End to end through
the real judge on the CPU: a candidate plants records (one of them loaded with code), the judge
harvests, a later evaluation's candidate finds exactly the rebuilt ones."""

from __future__ import annotations

import json
import math
import os
import sys
import time
from pathlib import Path

import pytest
from kernelskill.eval.api import _run_worker
from kernelskill.eval.judge import tuning as T
from kernelskill.eval.judge.link import CandidateLink
from kernelskill.eval.types import EvalOptions, EvalResult

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
from candidates import tuning_reader  # noqa: E402

KEY = "A" * 52
NAME = "matmul_kernel.autotune.json"
GOOD = {"key": [1024, 512, "torch.float32"],
        "configs_timings": [[{"kwargs": {"BLOCK_M": 64, "GROUP": 8}, "num_warps": 4, "num_ctas": 1,
                              "num_stages": 3, "maxnreg": None, "pre_hook": None, "ir_override": None},
                             [0.5, 0.4, 0.6]],
                            [{"kwargs": {"BLOCK_M": 128, "GROUP": 8}, "num_warps": 8, "num_ctas": 1,
                              "num_stages": 2, "maxnreg": None, "pre_hook": None, "ir_override": None},
                             [math.inf, math.inf, math.inf]]]}


def _with_config(**change: object) -> str:
    data = json.loads(json.dumps(GOOD))
    data["configs_timings"][0][0].update(change)
    return json.dumps(data)


def test_a_record_triton_wrote_rebuilds_to_what_it_reads() -> None:
    out = json.loads(T.rebuild(json.dumps(GOOD)))
    assert out["key"] == GOOD["key"]
    first, timing = out["configs_timings"][0]
    assert first == {"kwargs": {"BLOCK_M": 64, "GROUP": 8}, "num_warps": 4, "num_stages": 3,
                     "num_ctas": 1, "maxnreg": None}
    assert timing == [0.5, 0.4, 0.6] and out["configs_timings"][1][1] == [math.inf] * 3


@pytest.mark.parametrize("bad", [
    _with_config(ir_override="/etc/passwd"),  # dropped, not rejected: see the next test
    _with_config(kwargs={"BLOCK M": 64}),
    _with_config(kwargs={"BLOCK_M": "x; import os"}),
    _with_config(kwargs={"BLOCK_M": [64]}),
    _with_config(num_warps=0),
    _with_config(num_warps="4"),
    _with_config(maxnreg=-1),
    json.dumps({"key": GOOD["key"], "configs_timings": [[GOOD["configs_timings"][0][0], [float("nan")]]]}),
    json.dumps({"key": "not a list", "configs_timings": GOOD["configs_timings"]}),
    json.dumps({"key": GOOD["key"], "configs_timings": []}),
    json.dumps([1, 2]), "{", "[" * 100000,
])
def test_anything_but_plain_values_is_refused_or_dropped(bad: str) -> None:
    out = T.rebuild(bad)
    if out is not None:  # only the ir_override case rebuilds, without it
        assert "ir_override" not in out and "passwd" not in out and "pre_hook" not in out


def test_harvest_reads_no_link_no_fifo_and_no_oversized_file(tmp_path: Path) -> None:
    secret = tmp_path / "judge_secret.json"
    secret.write_text(json.dumps(GOOD).replace("matmul", "SECRET"))
    cache = tmp_path / "cache"
    (cache / KEY).mkdir(parents=True)
    (cache / KEY / NAME).write_text(json.dumps(GOOD))
    (cache / KEY / "linked.autotune.json").symlink_to(secret)
    os.mkfifo(cache / KEY / "pipe.autotune.json")  # a read would block forever
    (cache / KEY / "big.autotune.json").write_text(" " * (T.MAX_FILE_BYTES + 1) + json.dumps(GOOD))
    (cache / KEY / "notes.txt").write_text(json.dumps(GOOD))
    (cache / ("B" * 52)).symlink_to(cache / KEY)  # a linked key folder
    (cache / "..hidden").mkdir()
    (cache / "..hidden" / NAME).write_text(json.dumps(GOOD))
    got = T.harvest(tmp_path, cache)
    assert list(got) == [f"{KEY}/{NAME}"]
    assert "SECRET" not in json.dumps(got)
    assert T.harvest(tmp_path, tmp_path / "absent") == {}
    (tmp_path / "dot").mkdir()
    (tmp_path / "dot" / "cache").symlink_to(cache)  # the last component a link
    (tmp_path / "linked").symlink_to(tmp_path / "dot")  # a component on the way a link
    assert T.harvest(tmp_path, tmp_path / "dot" / "cache") == {}
    assert T.harvest(tmp_path, tmp_path / "linked" / "cache") == {}


def test_seed_writes_only_under_triton_names(tmp_path: Path) -> None:
    cache = tmp_path / "scratch" / "triton"
    records = {f"{KEY}/{NAME}": json.dumps(GOOD), f"../../{NAME}": json.dumps(GOOD),
               f"{KEY}/../../escape.autotune.json": json.dumps(GOOD), f"{KEY}/x.autotune.json": "{",
               "/abs/" + NAME: json.dumps(GOOD)}
    assert T.seed(cache, records) == 1
    written = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    assert written == [Path("scratch/triton") / KEY / NAME]
    assert T.seed(cache, ["not", "a", "map"]) == 0  # type: ignore[arg-type]


def test_merge_keeps_the_newer_record_and_a_cap() -> None:
    a = {f"{KEY}/{NAME}": "old"}
    assert T.merge(a, {f"{KEY}/{NAME}": "new"}) == {f"{KEY}/{NAME}": "new"}
    many = {f"{i:052d}/k.autotune.json": "x" for i in range(T.MAX_RECORDS + 10)}
    assert len(T.merge({}, many)) == T.MAX_RECORDS


# ---- through the real judge (CPU) --------------------------------------------------------------
PROBLEM = (Path(__file__).resolve().parents[1] / "fixtures" / "relu_scale.py").read_text()
EVIL_KEY = "C" * 52


def _judge(want: dict[str, str], **opts: object) -> EvalResult:
    o = EvalOptions(device="cpu", size="small", trials=1, timeout_s=120, baselines=False, timing=False,
                    **opts)
    source = tuning_reader(want)
    return _run_worker(PROBLEM, source, o, "relu_scale.py", "cand.py", EvalResult(device="cpu"))


def test_rank_evaluations_start_with_the_rebuilt_records_and_hand_them_on() -> None:
    evil = _with_config(ir_override="/etc/passwd")
    records = {f"{KEY}/{NAME}": json.dumps(GOOD, indent=1), f"{EVIL_KEY}/evil.autotune.json": evil,
               f"{KEY}/broken.autotune.json": "{", f"../{NAME}": json.dumps(GOOD)}
    rebuilt = {f"{KEY}/{NAME}": T.rebuild(json.dumps(GOOD)),
               f"{EVIL_KEY}/evil.autotune.json": T.rebuild(evil)}
    r = _judge(rebuilt, timing_mode="rank", tuning=records)
    assert r.correct, (r.stage, r.reason, r.log_tail[-800:])
    assert r.tuning == rebuilt  # harvested back from its cache once it was dead
    assert "passwd" not in json.dumps(r.tuning)


def test_a_full_evaluation_starts_with_an_empty_cache() -> None:
    r = _judge({}, timing_mode="full", tuning={f"{KEY}/{NAME}": json.dumps(GOOD)})
    assert r.correct, (r.stage, r.reason, r.log_tail[-800:])
    assert r.tuning == {}


def test_the_judge_harvests_what_the_dead_candidate_left(tmp_path: Path) -> None:
    """As a candidate past the guard would: records planted straight into its cache, one a link to
    a file of the judge's; the link is not followed, the rest comes back rebuilt."""
    secret = tmp_path / "secret.autotune.json"
    secret.write_text(json.dumps(GOOD).replace("GROUP", "SECRET"))
    with CandidateLink("cpu", time.monotonic() + 60) as link:
        cache = link._triton_cache()
        (cache / KEY).mkdir(parents=True)
        (cache / KEY / NAME).write_text(json.dumps(GOOD))
        (cache / KEY / "stolen.autotune.json").symlink_to(secret)
    assert link.tuning == {f"{KEY}/{NAME}": T.rebuild(json.dumps(GOOD))}
    assert not link.scratch.exists()

"""Memory that learns per (structure, skill, variant, device): CPU (interpreter) timings are never
gains, files written before variants still load, variants are ordered by their own record, and two
processes writing at once lose no update; a variant that only lost by a wide margin is held back."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

from kernelskill.skill_index import ExperienceStats, SkillIndex
from kernelskill.skill_index.ranking import experience_adjustment, known_loser, variant_order
from kernelskill.skill_index.schema import variant_key
from kernelskill.skill_index.stats import Experience


def test_cpu_attempts_count_as_tries_never_as_gains(tmp_path: Path) -> None:
    stats = ExperienceStats(tmp_path / "stats.json")
    for _ in range(3):
        stats.record_outcome("multi-row-blocks", "row-reduction", "cpu", 3.23, True)
    rec = stats.records()[0]
    assert (rec.tries, rec.wins, rec.gains, rec.mean_gain) == (3, 0, 0, None)
    exp = stats.experience("multi-row-blocks", ["row-reduction"])
    assert exp.untimed == 3 and experience_adjustment(exp) == 0.0  # no evidence either way
    assert "3 CPU tries, no timing" in exp.describe() and "[from cpu]" in exp.describe()
    # The same skill timed on a GPU: only those figures move the ranking, and say where they come from.
    stats.record_outcome("multi-row-blocks", "row-reduction", "H200", 1.5, True)
    exp = stats.experience("multi-row-blocks", ["row-reduction"], gpu="H200")
    assert (exp.tries, exp.wins, exp.untimed) == (4, 1, 3) and exp.describe().startswith("1/1 wins")
    assert "[from H200, cpu]" in exp.describe()


def test_a_file_written_before_variants_loads_and_its_cpu_wins_are_ignored(tmp_path: Path) -> None:
    old = {"version": 1, "records": [
        {"skill_id": "multi-row-blocks", "structure": "row-reduction", "gpu": "cpu", "tries": 3, "wins": 3,
         "gains": 3, "log_gain_sum": 3.5},
        {"skill_id": "online-softmax", "structure": "row-reduction", "gpu": "H200", "tries": 2, "wins": 1,
         "gains": 2, "log_gain_sum": 0.4}]}
    path = tmp_path / "stats.json"
    path.write_text(json.dumps(old))
    stats = ExperienceStats(path)
    cpu, gpu = stats.records()
    assert cpu.variant == "" and cpu.mean_gain is None
    assert stats.experience("multi-row-blocks").wins == 0
    assert gpu.mean_gain is not None and stats.experience("online-softmax").wins == 1
    stats.record_outcome("online-softmax", "row-reduction", "H200", 1.2, True, variant_key({"tile": 8192}))
    rows = json.loads(path.read_text())["records"]
    assert len(rows) == 3 and {r["variant"] for r in rows} == {"", '{"tile":8192}'}


def test_variants_are_ordered_by_their_own_record(tmp_path: Path) -> None:
    stats = ExperienceStats(tmp_path / "stats.json")
    variants = [{}, {"tile": 8192}, {"tile": 2048}]
    for _ in range(4):
        stats.record_outcome("s", "row-reduction", "H200", 1.6, True, variant_key({"tile": 2048}))
        stats.record_outcome("s", "row-reduction", "H200", 0.7, True, variant_key({}))

    def exp(v: dict) -> Experience:
        return stats.experience("s", ["row-reduction"], "H200", variant_key(v))

    assert variant_order(variants, exp) == [{"tile": 2048}, {"tile": 8192}, {}]
    assert variant_order(variants, lambda v: Experience()) == variants  # no history: declared order
    assert stats.experience("s", ["row-reduction"]).tries == 8  # the skill's record sums its variants


def _writer(path: str, who: int, n: int, go: object) -> None:
    stats = ExperienceStats(Path(path))
    go.wait(60)  # both start writing together
    for i in range(n):
        variant = variant_key({"w": who, "i": i % 2})
        stats.record_outcome("online-softmax", "row-reduction", "H200", 1.1, True, variant)


def test_two_concurrent_writers_lose_no_update(tmp_path: Path) -> None:
    path, n = tmp_path / "stats.json", 150
    ctx = multiprocessing.get_context("spawn")
    go = ctx.Event()
    procs = [ctx.Process(target=_writer, args=(str(path), who, n, go)) for who in (1, 2)]
    for p in procs:
        p.start()
    go.set()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    records = ExperienceStats(path).records()
    assert sum(r.tries for r in records) == 2 * n and len(records) == 4
    assert all(r.tries == n // 2 and r.wins == n // 2 for r in records)


def test_a_variant_that_only_lost_widely_is_a_known_loser(tmp_path: Path) -> None:
    stats = ExperienceStats(tmp_path / "stats.json")
    ieee, row = variant_key({"input_precision": "ieee"}), variant_key({"f16_scales": "row"})

    def loser(skill: str, key: str, gpu: str = "H100") -> bool:
        return known_loser(stats.experience(skill, ["gemm"], gpu, key),
                           stats.experience(None, ["gemm"], gpu, key))

    stats.record_outcome("tiles", "gemm", "H100", 0.35, True, ieee)
    stats.record_outcome("tiles", "gemm", "H100", 0.95, True, row)
    assert loser("tiles", ieee) and not loser("tiles", row)  # 0.95x: within reach, not a loser
    assert not loser("split-k", ieee)  # one other skill's loss is not yet evidence enough
    stats.record_outcome("grouped", "gemm", "H100", 0.36, True, ieee)
    assert loser("split-k", ieee)  # two losses of the same parameters under other skills
    assert not loser("split-k", ieee, gpu="H200")  # another GPU's history does not count
    stats.record_outcome("split-k", "gemm", "H100", 1.2, True, ieee)
    assert not loser("split-k", ieee)  # its own record, a win, decides
    for _ in range(3):
        stats.record_outcome("cpu-only", "gemm", "cpu", 0.1, True, row)
    assert not loser("cpu-only", row, gpu="cpu")  # interpreter timings are never evidence


def test_the_index_holds_back_known_losers_only_where_it_has_timings(tmp_path: Path) -> None:
    idx = SkillIndex(None, tmp_path / "index", tmp_path / "stats.json")  # nothing is embedded here
    for skill in ("tiles", "grouped"):
        idx.stats.record_outcome(skill, "gemm", "H100", 0.35, True, variant_key({"input_precision": "ieee"}))
    assert idx.known_loser("split-k", {"input_precision": "ieee"}, ["gemm"], "H100")
    assert not idx.known_loser("split-k", {}, ["gemm"], "H100")  # the default is the skill itself
    assert not idx.known_loser("split-k", {"input_precision": "ieee"}, ["gemm"], None)  # a CPU run

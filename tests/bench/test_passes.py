"""`kernelskill passes`: two bench folders of the same problems compared through their reports'
rounds (bench/passes.py), on report.json files written here the way graph/report.py writes them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kernelskill.bench.passes import PassRow, compare, pass_row, read_pass, render, summary
from kernelskill.cli.main import main


def report(won: list[int], rounds: int, ms: float | None, repeats: tuple[int, ...] = ()) -> dict:
    """A six-round report: one judged attempt per round (repeats: rounds whose attempt was a
    repeat, never judged), the rounds in `won` won."""
    attempts = [{"round": r, "node": "generator", "stage": "done", "outcome": "correct",
                 "repeat_of": 0 if r in repeats else None} for r in range(rounds + 1)]
    attempts += [{"round": 0, "node": "generator", "stage": "author", "repeat_of": None}]  # never judged
    return {"rounds": rounds, "attempts": attempts,
            "per_round": [{"round": r, "won": r in won} for r in range(rounds + 1)],
            "delivered": {"correct": ms is not None, "runtime_ms": ms, "timing_is_cpu": False}}


def write(folder: Path, reports: dict[str, dict]) -> Path:
    for key, rep in reports.items():
        (folder / key).mkdir(parents=True)
        (folder / key / "report.json").write_text(json.dumps(rep))
    return folder


def test_the_row_counts_judged_evaluations_up_to_the_round_that_last_won() -> None:
    assert pass_row(report([1, 4], 6, 0.9, repeats=(3,))) == PassRow(4, 4, 6, 0.9)  # rounds 0-4, less 3
    assert pass_row(report([], 6, 1.0)) == PassRow(0, 1, 6, 1.0)  # the first candidate stayed best
    cpu = report([], 2, 5.0)
    cpu["delivered"]["timing_is_cpu"] = True
    assert pass_row(cpu).delivered_ms is None and pass_row(report([], 1, None)).delivered_ms is None


def test_the_summary_compares_only_problems_both_passes_finished(tmp_path: Path) -> None:
    first = read_pass(write(tmp_path / "a", {"level1/01_mm": report([2, 5], 6, 1.0),
                                              "level1/05_mv": report([1], 6, 2.0),
                                              "level3/05_mb": report([2], 6, 3.0)}))
    second = read_pass(write(tmp_path / "b", {"level1/01_mm": report([2], 6, 1.0),
                                               "level1/05_mv": report([3], 6, 1.0)}))
    pairs = compare(first, second)
    assert [p for p, _, _ in pairs] == ["level1/01_mm", "level1/05_mv", "level3/05_mb"]
    s = summary(pairs)
    assert (s["problems"], s["fewer_rounds"], s["same_rounds"], s["more_rounds"]) == (2, 1, 0, 1)
    assert s["mean_best_round"] == [3.0, 2.5] and s["evaluations_to_best"] == [8, 7]
    assert s["delivered_second_over_first"] == pytest.approx(0.5 ** 0.5)
    table = render(pairs)
    assert "| level3/05_mb | 2 | 3 | 6 | 3.0000 | - | - | - | - |" in table
    assert "fewer rounds on 1, as many on 0 and more on 1; mean round of the best 3.00 -> 2.50" in table


def test_cli_prints_the_table_or_json_and_refuses_a_folder_without_reports(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write(tmp_path / "a", {"level1/01_mm": report([1], 6, 1.0)})
    b = write(tmp_path / "b", {"level1/01_mm": report([], 6, 0.8)})
    assert main(["passes", str(a), str(b)]) == 0
    assert "| level1/01_mm | 1 | 2 | 6 | 1.0000 | 0 | 1 | 6 | 0.8000 |" in capsys.readouterr().out
    assert main(["passes", str(a), str(b), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["summary"]["fewer_rounds"] == 1
    assert data["problems"]["level1/01_mm"]["second"]["best_round"] == 0
    (tmp_path / "empty").mkdir()
    assert main(["passes", str(a), str(tmp_path / "empty")]) == 2
    assert "no problem's report.json" in capsys.readouterr().err
    assert main(["passes", str(a), str(tmp_path / "nope")]) == 2
    assert "no such folder" in capsys.readouterr().err

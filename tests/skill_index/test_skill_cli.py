"""`kernelskill skills list|show|search|stats --json` parse and carry the documented keys."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from kernelskill.skill_index import ExperienceStats
from kernelskill.skill_index.cli import add_skills_parser


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="kernelskill")
    add_skills_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    code = args.func(args)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def paths(index_dir: Path, tmp_path: Path) -> list[str]:
    return ["--index-dir", str(index_dir), "--stats-path", str(tmp_path / "stats.json")]


def test_list_json(capsys, paths):
    code, out, _ = run(["skills", "list", "--json", *paths], capsys)
    data = json.loads(out)
    assert code == 0 and len(data) >= 44
    assert all({"id", "title", "kind"} <= set(row) for row in data)


def test_show_json_and_text(capsys, paths):
    code, out, _ = run(["skills", "show", "online-softmax", "--json", *paths], capsys)
    data = json.loads(out)
    assert code == 0 and data["id"] == "online-softmax" and "## How" in data["body"]
    assert {"title", "structures", "bottlenecks", "triggers", "preconditions", "expected"} <= set(data)
    code, out, _ = run(["skills", "show", "online-softmax", *paths], capsys)
    assert code == 0 and out.startswith("# ")


def test_search_json_ranks_with_reasons(capsys, paths, index):  # `index` builds the vectors once
    sig = "bottleneck: memory-bound; structure: scan; ops: cumsum"
    code, out, _ = run(["skills", "search", sig, "-k", "3", "--json", *paths], capsys)
    data = json.loads(out)
    assert code == 0 and len(data) == 3
    assert all({"id", "title", "score", "reason"} <= set(row) for row in data)
    assert data[0]["id"] == "single-pass-block-scan"
    code, out, _ = run(["skills", "search", "softmax", "over", "long", "rows", *paths], capsys)
    assert code == 0 and " 1. " in out


def test_stats_json(capsys, paths, tmp_path):
    stats = ExperienceStats(tmp_path / "stats.json")
    stats.record_outcome("online-softmax", "row-reduction", "H200", 1.5, True)
    code, out, _ = run(["skills", "stats", "--json", *paths], capsys)
    data = json.loads(out)
    assert code == 0 and data[0]["skill_id"] == "online-softmax"
    assert {"structure", "gpu", "tries", "wins", "mean_gain"} <= set(data[0])
    code, out, _ = run(["skills", "stats", *paths], capsys)
    assert "online-softmax" in out


def test_user_errors_exit_2_with_one_line(capsys, paths, tmp_path):
    code, out, err = run(["skills", "show", "no-such-skill", *paths], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1 and "unknown skill id 'no-such-skill'" in err
    bad = tmp_path / "skills" / "broken"
    bad.mkdir(parents=True)
    (bad / "SKILL.md").write_text("---\nid: broken\n---\n")
    code, _, err = run(["skills", "list", "--skills-dir", str(tmp_path / "skills"), *paths], capsys)
    assert code == 2 and err.count("\n") == 1 and "broken/SKILL.md: field 'title': missing" in err


def test_stats_and_search_name_the_device_of_each_figure(capsys, paths, tmp_path, index):
    stats = ExperienceStats(tmp_path / "stats.json")
    for _ in range(3):  # a CPU smoke run: interpreter timings, never wins
        stats.record_outcome("online-softmax", "row-reduction", "cpu", 3.23, True, '{"tile":8192}')
    stats.record_outcome("online-softmax", "row-reduction", "H200", 1.4, True, "{}")
    code, out, _ = run(["skills", "stats", "--json", *paths], capsys)
    data = {row["gpu"]: row for row in json.loads(out)}
    assert code == 0 and data["cpu"]["wins"] == 0 and data["cpu"]["mean_gain"] is None
    assert data["cpu"]["device"].startswith("cpu (interpreter") and data["H200"]["device"] == "H200"
    assert data["cpu"]["variant"] == '{"tile":8192}'
    code, out, _ = run(["skills", "stats", *paths], capsys)
    assert "tries only" in out and '{"tile":8192}' in out
    code, out, _ = run(["skills", "search", "softmax", "over", "rows", "--json", "-k", "10", *paths], capsys)
    reason = next(row["reason"] for row in json.loads(out) if row["id"] == "online-softmax")
    assert "1/1 wins" in reason and "3 CPU tries, no timing" in reason and "[from H200, cpu]" in reason

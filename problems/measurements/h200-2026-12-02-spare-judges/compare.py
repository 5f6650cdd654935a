"""Two evalset.py runs side by side (before.jsonl after.jsonl): candidate and eager times, their
ratios, and the evaluation's seconds, per problem; medians last. Machines differ by a few percent
in memory-bound times, so the candidate's time is also given relative to eager's in the same run."""
import json
import statistics
import sys


def rows(path: str) -> dict[str, dict]:
    return {r["problem"]: r for r in map(json.loads, open(path)) if r.get("correct")}


before, after = rows(sys.argv[1]), rows(sys.argv[2])
print(f"{'problem':36} {'ours b/a ms':>15} {'eager b/a ms':>15} {'x eager b/a':>11} {'change':>7} {'eval s b/a':>11}")
change, evals = [], []
for key, a in after.items():
    b = before.get(key)
    xa = a["eager_ms"] / a["runtime_ms"]
    if b is None:
        print(f"{key[:36]:36} {'-':>7}/{a['runtime_ms']:<7.3f} {'-':>7}/{a['eager_ms']:<7.3f} {'-':>5}/{xa:<5.2f}")
        continue
    xb = b["eager_ms"] / b["runtime_ms"]
    change.append(xa / xb)
    evals.append((b["eval_s"], a["eval_s"]))
    print(f"{key[:36]:36} {b['runtime_ms']:7.3f}/{a['runtime_ms']:<7.3f} {b['eager_ms']:7.3f}/{a['eager_ms']:<7.3f} "
          f"{xb:5.2f}/{xa:<5.2f} {xa / xb - 1:+7.1%} {b['eval_s']:5.1f}/{a['eval_s']:<5.1f}")
if change:
    print(f"median change in x eager {statistics.median(change) - 1:+.1%} over {len(change)}; evaluation s median "
          f"{statistics.median(e[0] for e in evals):.1f} -> {statistics.median(e[1] for e in evals):.1f}")
print(f"correct after: {len(after)}; failed after: "
      f"{[r['problem'] for r in map(json.loads, open(sys.argv[2])) if not r.get('correct')]}")

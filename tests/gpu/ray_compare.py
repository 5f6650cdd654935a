"""Two bench folders of the same problems side by side: the default pool against `--ray` (issue D).

    python3 tests/gpu/ray_compare.py POOL_DIR RAY_DIR

Per problem: correct, delivered runtime and x eager under each, the runtime ratio (ray / pool: equal
within noise is about 0.97-1.03 on a GPU), where the Ray task ran, and the wall seconds of each with
their difference, the scheduling cost per problem (a Ray task's start, its worker's imports, the
result's trip back). Last, the medians.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path


def rows(folder: Path) -> dict[str, dict]:
    path = folder / "results.jsonl"
    if not path.exists():
        return {}
    return {r["problem"]: r for r in map(json.loads, path.read_text().splitlines()) if r.get("problem")}


def main(pool_dir: str, ray_dir: str) -> None:
    pool, ray = rows(Path(pool_dir)), rows(Path(ray_dir))
    ratios, extra = [], []
    print(f"{'problem':36s} {'pool ms':>9s} {'ray ms':>9s} {'ray/pool':>8s} {'x eager pool':>12s} "
          f"{'x eager ray':>11s} {'wall pool':>9s} {'wall ray':>8s} {'ray-pool s':>10s}  where (ray)")
    for name in sorted(set(pool) | set(ray)):
        a, b = pool.get(name), ray.get(name)
        if not a or not b:
            print(f"{name:36s} only in {'pool' if a else 'ray'}")
            continue
        ratio = b["runtime_ms"] / a["runtime_ms"] if a.get("runtime_ms") and b.get("runtime_ms") else None
        wall = b["wall_s"] - a["wall_s"]
        if ratio:
            ratios.append(ratio)
        extra.append(wall)
        where = f"{b.get('host')} node {str(b.get('node_id'))[:8]} GPU {b.get('gpu_index')}"
        both = a.get("correct") and b.get("correct")
        x_a, x_b = a.get("speedup_vs_eager") or 0, b.get("speedup_vs_eager") or 0
        print(f"{name:36s} {a.get('runtime_ms') or 0:9.4f} {b.get('runtime_ms') or 0:9.4f} {ratio or 0:8.3f} "
              f"{x_a:12.2f} {x_b:11.2f} {a['wall_s']:9.1f} {b['wall_s']:8.1f} {wall:10.1f}  {where}"
              + ("" if both else f"  correct {a.get('correct')}/{b.get('correct')}"))
    if ratios:
        print(f"median runtime ray / pool {statistics.median(ratios):.3f} over {len(ratios)}; "
              f"median wall difference {statistics.median(extra):+.1f} s per problem")


if __name__ == "__main__":
    main(*sys.argv[1:3])

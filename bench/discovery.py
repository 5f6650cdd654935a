"""Which problems a bench runs: PATHs (files, folders, folders of level folders) -> BenchProblem list.

A problem's key is `<level>/<file stem>` (e.g. `level1/11_gelu`); it names the problem in
results.jsonl and its output folder `DIR/<key>/`. The level comes from a `level<N>` folder name
(our `problems/` and a KernelBench checkout's `KernelBench/` both use them), "unknown" otherwise.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..state.output import plural

_LEVEL = re.compile(r"^level[_-]?(\d+)$", re.IGNORECASE)


class DiscoveryError(Exception):
    """No usable problem in the given paths, or an ambiguous set of them (one line)."""


@dataclass(frozen=True)
class BenchProblem:
    path: Path
    level: str  # "level1", "level2", ... or "unknown"
    name: str  # file stem

    @property
    def key(self) -> str:
        return f"{self.level}/{self.name}"

    @property
    def category(self) -> str:
        return category_of(self.name)


def level_of(folder: Path) -> str:
    m = _LEVEL.match(folder.name)
    return f"level{int(m.group(1))}" if m else "unknown"


# Category of a problem from its file name, first rule that matches wins. Names are matched as
# lower case with separators removed ("ConvTranspose3d", "conv_transposed_2D" -> "convtranspose...").
# Whole architectures come first (a ResNet is a "cnn" even though it is made of convs), then the
# main operator of a fused chain (level-2 names start with it: "Conv2d_ReLU_BiasAdd" -> conv).
CATEGORY_RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("activation", ("newgelu",)),  # KernelBench's "MinGPTNewGelu" is an activation, not a GPT
    ("recurrent", ("lstm", "ltsm", "gru", "rnn")),
    ("attention", ("attention", "transformer", "attn", "gpt", "vit", "swin", "mamba")),
    ("cnn", ("resnet", "densenet", "mobilenet", "efficientnet", "squeezenet", "shufflenet", "googlenet",
             "inception", "lenet", "alexnet", "vgg", "regnet", "convnext", "unet", "cnn",
             "squeezeexcitation")),
    ("mlp", ("mlp",)),
    ("conv-transpose", ("convtranspose", "deconv")),
    ("conv", ("conv",)),
    ("gemm", ("matmul", "gemm", "linear", "bmm", "matvec", "matrix", "einsum")),
    ("normalization", ("norm",)),
    ("softmax", ("softmax",)),
    ("pooling", ("pool",)),
    ("loss", ("loss", "crossentropy", "kldiv", "hinge", "triplet", "huber", "mse", "smoothl1")),
    ("scan", ("cumsum", "cumprod", "scan")),
    ("reduction", ("sum", "mean", "max", "min", "prod", "reduc")),
    ("activation", ("relu", "gelu", "silu", "swish", "sigmoid", "tanh", "softplus", "softsign", "elu",
                    "hardtanh", "mish", "swiglu")),
)


def category_of(name: str) -> str:
    """Operator family of a problem from its file name ("other" when no rule matches)."""
    flat = re.sub(r"[^a-z]", "", name.lower())
    for category, needles in CATEGORY_RULES:
        if any(n in flat for n in needles):
            return category
    return "other"


def _order(p: BenchProblem) -> tuple[int, str, int, str]:
    # KernelBench files are "1_...", "10_...": order by the number, not the string.
    m = re.match(r"\d+", p.name)
    lv = re.search(r"\d+", p.level)
    return (int(lv.group()) if lv else 1 << 30, p.level, int(m.group()) if m else 1 << 30, p.name)


def _problem_files(folder: Path) -> list[Path]:
    return [f for f in sorted(folder.glob("*.py")) if not f.name.startswith("_")]


def _is_problem(f: Path) -> str | None:
    """None when f parses and defines Model, get_inputs, get_init_inputs; else why not (one line)."""
    from ..eval.problem import ProblemError, check_problem_source, read_source

    try:
        check_problem_source(read_source(f), str(f))
    except ProblemError as e:
        return str(e).splitlines()[0]
    return None


def discover(paths: list[str], warn: Callable[[str], None] = lambda _: None) -> list[BenchProblem]:
    """Every problem under `paths`, in level then number order; raises DiscoveryError.

    A named file must be a problem; a .py file in a folder that is not one is skipped with a warning."""
    found: dict[str, BenchProblem] = {}
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise DiscoveryError(f"no such file or folder: {path}")
        if path.is_file():
            if path.suffix != ".py":
                raise DiscoveryError(f"{path}: expected a problem .py file or a folder of them")
            if why := _is_problem(path):
                raise DiscoveryError(why)
            files = [path]
        else:
            files = _problem_files(path)
            for sub in sorted(d for d in path.iterdir() if d.is_dir() and _LEVEL.match(d.name)):
                files += _problem_files(sub)
            if not files:
                raise DiscoveryError(f"{path}: no problem files (*.py) in it nor in level<N>/ folders "
                                     "under it")
            for f in list(files):
                if why := _is_problem(f):
                    warn(f"skipping {why}")
                    files.remove(f)
            if not files:
                raise DiscoveryError(f"{path}: none of its .py files is a KernelBench problem")
        for f in files:
            p = BenchProblem(path=f.resolve(), level=level_of(f.parent), name=f.stem)
            other = found.get(p.key)
            if other is not None and other.path != p.path:
                raise DiscoveryError(f"two problems are both {p.key}: {other.path} and {p.path}; "
                                     "bench them into separate --out folders")
            found[p.key] = p
    return sorted(found.values(), key=_order)


def select(problems: list[BenchProblem], globs: list[str], flag: str = "--filter") -> list[BenchProblem]:
    """Problems whose key (`level1/11_gelu`) or file stem matches any glob; all when none given."""
    if not globs:
        return problems
    kept = [p for p in problems if any(fnmatch.fnmatchcase(p.key, g) or fnmatch.fnmatchcase(p.name, g)
                                       for g in globs)]
    if not kept:
        example = problems[0].key if problems else "level1/11_gelu"
        among = plural(len(problems), "problem")
        raise DiscoveryError(f"{flag} {' '.join(globs)} matches none of the {among} "
                             f"(globs match keys like {example} or file stems)")
    return kept


def thread_id(bench_id: str, problem: BenchProblem) -> str:
    """Deterministic per (bench, problem): a resumed bench continues the same graph thread. The bench id
    is made once and kept in DIR/bench.json, so a moved bench folder keeps its threads."""
    return f"bench-{bench_id}-{problem.key.replace('/', '-')}"

"""Does a candidate change a kernel of the best, or how it is launched (authors/builtin/touches.py)?
Handwritten sources for each case, then the built-in author's candidates for the MobileNet block
whose H100 rounds (2026-12-07) applied two GEMM skills that left its depthwise kernel as it was."""

from __future__ import annotations

from pathlib import Path

from kernelskill.authors.base import AuthorTask
from kernelskill.authors.builtin.author import BuiltinAuthor
from kernelskill.authors.builtin.touches import normalise, touches
from kernelskill.authors.scripted import ScriptedAuthor
from kernelskill.state.records import Problem

ROOT = Path(__file__).resolve().parents[2]

OLD = '''
import triton

_plans_5 = {}


@triton.autotune(configs=[], key=["n"])
@triton.jit
def _dw_kernel_6(x, y, n, BLOCK: tl.constexpr):
    tl.store(y, tl.load(x) * 2)


@triton.jit
def _other_kernel_2(x):
    pass


def _dw_7(x):
    return _run(_plans_5, _dw_kernel_6, (x,), (1e-05, True))


def _other_3(x):
    return _run({}, _other_kernel_2, (x,), ())
'''


def test_renumbered_names_touch_nothing() -> None:
    renumbered = (OLD.replace("_plans_5", "_plans_9").replace("_dw_kernel_6", "_dw_kernel_8")
                  .replace("_dw_7", "_dw_11").replace("_other_kernel_2", "_other_kernel_4"))
    assert touches(OLD, renumbered, "_dw_kernel_6") is False
    assert touches(OLD, OLD, "_dw_kernel_6") is False
    # Another kernel changed: not this one.
    assert touches(OLD, OLD.replace("return _run({}, _other", "return _run({'t': 1}, _other"),
                   "_dw_kernel_6") is False
    assert normalise("_dwconv_7_plans _plans_11 _npow2 e_s0_0") == "_dwconv_#_plans _plans_# _npow2 e_s0_0"


def test_a_changed_launch_argument_kernel_body_or_decorator_touches_it() -> None:
    assert touches(OLD, OLD.replace("(1e-05, True))", "(1e-05, True, {'tile': 1024}))"), "_dw_kernel_6")
    assert touches(OLD, OLD.replace("tl.load(x) * 2", "tl.load(x) * 2.0"), "_dw_kernel_6")
    assert touches(OLD, OLD.replace('key=["n"]', 'key=["n", "BLOCK"]'), "_dw_kernel_6")


def test_a_removed_kernel_is_touched_and_a_vendor_kernel_is_unknown() -> None:
    start, end = OLD.index("@triton.autotune"), OLD.index("@triton.jit\ndef _other")
    gone = OLD[:start] + OLD[end:]
    assert touches(OLD, gone.replace("_dw_kernel_6", "torch_dw"), "_dw_kernel_6") is True
    assert touches(OLD, OLD, "sm90_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nchw") is None
    assert touches(OLD, OLD, "_plans_5") is None  # a constant, not a def
    assert touches(OLD, "def (:", "_dw_kernel_6") is None


def test_other_authors_cannot_tell() -> None:
    assert ScriptedAuthor([]).touches("any-skill", AuthorTask(problem=Problem(name="p", path="p", source="")),
                                      {}, "_k") is None


def test_the_mobilenet_gemm_skills_leave_the_depthwise_kernel_and_the_stats_tile_changes_its_launch() -> None:
    path = ROOT / "problems" / "level3" / "05_mobilenet_inverted_residual.py"
    author = BuiltinAuthor()
    task = AuthorTask(problem=Problem(name=path.stem, path=str(path), source=path.read_text(), size="small"),
                      device="cpu")
    task.best = author.generate(task)
    builds: list[str] = []
    build = author._build
    author._build = lambda t, cfg, note: builds.append(note.removeprefix("applied ")) or build(  # type: ignore[method-assign]
        t, cfg, note)
    dw = next(name for name in task.best.author_state.kernels if name.startswith("_dwconv_kernel"))
    for gemm in ("conv-implicit-gemm", "pointwise-conv-as-gemm"):
        assert author.can_apply(gemm, task), gemm  # the 1x1 convolutions move to our GEMM...
        assert author.touches(gemm, task, {}, dw) is False, gemm  # ...the depthwise kernel stays
    stats = {"stats_tile": 1024}
    assert author.touches("two-level-norm-statistics", task, stats, "_nrm_stats_kernel") is True
    assert author.touches("two-level-norm-statistics", task, stats, dw) is False
    assert author.touches("conv-implicit-gemm", task, {}, "sm90_xmma_fprop_implicit_gemm") is None
    assert author.touches("no-such-skill", task, {}, dw) is None
    # can_apply and touches share one build per (skill, parameters) on this best; none for a
    # kernel that is not a def of the best, or a skill without a template.
    assert sorted(builds) == ["conv-implicit-gemm", "pointwise-conv-as-gemm", "two-level-norm-statistics"]

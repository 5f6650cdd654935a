"""Nsight Compute on the kernels that dominate one forward: the command line and its CSV, parsed.

ncu runs with `--clock-control none` (the clocks timed runs see), `--profile-from-start off`
(only the forward between cudaProfilerStart/Stop is profiled), `--graph-profiling node` (a kernel
launched by a CUDA-graph replay is profiled as a kernel of its own) and a curated set of sections:
throughput as % of peak (DRAM, L2, L1, SM), occupancy and its limiter, registers, spills, warp
stalls, the busiest pipe. `--csv --page details` prints one row per (kernel, metric) and one per
rule; both are parsed here into an `NcuKernel` per profiled launch. Standard library only.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field

SECTIONS = ("SpeedOfLight", "Occupancy", "LaunchStats", "WarpStateStats", "MemoryWorkloadAnalysis",
            "ComputeWorkloadAnalysis")
# Warp-stall reasons ncu reports on every architecture since Volta (Hopper adds a few, unused here).
STALLS = ("long_scoreboard", "short_scoreboard", "mio_throttle", "lg_throttle", "math_pipe_throttle", "wait",
          "barrier", "membar", "not_selected", "no_instruction", "dispatch_stall", "branch_resolving",
          "tex_throttle", "drain", "imc_miss", "sleeping", "misc")
# Raw metrics beyond the sections: DRAM bytes and fp32 instruction counts give each kernel its own
# roofline, the tensor pipe shows TF32/FP16 MMA use, the stall ratios rank every stall reason (the
# WarpStateStats section alone names only the worst ones, in rule text). If this ncu does not know
# one of them, the profiler retries with the sections alone.
METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum",
           "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
           "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
           "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
           "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
           *(f"smsp__average_warps_issue_stalled_{s}_per_issue_active.ratio" for s in STALLS))

_STALL_METRIC = re.compile(r"smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio")
_STALL_RULE = re.compile(r"spends ([\d.]+) cycles being stalled (.+?)\.(?: |$)")
_TOP_PIPE = re.compile(r"^(.+?) is the highest-utilized pipeline \(([\d.]+)%\)")
# Rule phrases (WarpStateStats CPIStall) -> the stall reason's metric name.
_STALL_PHRASES = (("scoreboard dependency on a L1TEX", "long_scoreboard"),
                  ("scoreboard dependency on a MIO", "short_scoreboard"),
                  ("fixed latency execution dependency", "wait"), ("MIO", "mio_throttle"),
                  ("(LG)", "lg_throttle"), ("memory barrier", "membar"), ("barrier", "barrier"),
                  ("execution pipe", "math_pipe_throttle"),
                  ("branch", "branch_resolving"), ("instruction", "no_instruction"),
                  ("dispatch", "dispatch_stall"), ("texture", "tex_throttle"), ("selected", "not_selected"))
_LIMITS = (("Block Limit Registers", "registers"), ("Block Limit Shared Mem", "shared-memory"),
           ("Block Limit Warps", "warps"), ("Block Limit SM", "blocks"), ("Block Limit Barriers", "barriers"))
_TIME_UNITS = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3,
               "s": 1e6, "second": 1e6}
_PREFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


@dataclass
class NcuKernel:
    """One profiled launch. Percentages are of the hardware peak ncu assumes (DRAM: ~4.8 TB/s on
    the H200, of which the measured copy ceiling is ~87%)."""

    id: int
    name: str
    duration_us: float | None = None
    dram_pct: float | None = None
    l2_pct: float | None = None
    l1_pct: float | None = None
    sm_pct: float | None = None
    mem_pct: float | None = None
    """ncu's 'Memory Throughput': the busiest of DRAM, L2, L1."""
    dram_bytes: float | None = None
    """Read + written; from dram__bytes when collected, else DRAM byte/s x duration."""
    flops: float | None = None
    """fp32 FLOPs executed on CUDA cores (2 per FFMA); tensor-core work is not counted."""
    tensor_pct: float | None = None
    top_pipe: str | None = None
    top_pipe_pct: float | None = None
    issue_pct: float | None = None
    registers: int | None = None
    block: int | None = None
    grid: int | None = None
    waves: float | None = None
    occupancy_pct: float | None = None
    theoretical_occupancy_pct: float | None = None
    occupancy_limiter: str | None = None
    spill_requests: float | None = None
    cpi: float | None = None
    """Warp cycles per issued instruction; the stall cycles below add up to about this."""
    stalls: dict[str, float] = field(default_factory=dict)
    """Stall reason -> warp cycles per issued instruction, worst first."""


def command(ncu: str, out_args: list[str], *, kernel_regex: str | None, launch_count: int,
            metrics: bool = True, graph_nodes: bool = True) -> list[str]:
    """The ncu invocation in front of `out_args` (the target process's command line).

    `graph_nodes`: ask for `--graph-profiling node` explicitly (the default where ncu knows the
    option; an older ncu refuses it, and the profiler retries without it)."""
    cmd = [ncu, "--clock-control", "none", "--profile-from-start", "off", "--csv", "--page", "details",
           "--launch-count", str(launch_count)]
    if graph_nodes:
        cmd += ["--graph-profiling", "node"]
    for s in SECTIONS:
        cmd += ["--section", s]
    if metrics:
        cmd += ["--metrics", ",".join(METRICS)]
    if kernel_regex:
        cmd += ["--kernel-name", f"regex:{kernel_regex}"]
    return cmd + out_args


def base_name(kernel: str) -> str:
    """The bare function name ncu filters on: 'void at::native::(anonymous namespace)::
    cunn_SoftMaxForward<4, float>(...)' -> 'cunn_SoftMaxForward'."""
    s = kernel.replace("(anonymous namespace)", "").replace("<unnamed>", "")
    cut = [i for i in (s.find("<"), s.find("(")) if i > 0]
    s = s[:min(cut)] if cut else s
    s = s.strip().split()[-1] if s.strip() else kernel
    return s.split("::")[-1] or kernel


def _number(text: str, unit: str = "") -> float | None:
    try:
        value = float(text.replace(",", ""))
    except ValueError:
        return None  # 'no data', 'n/a', words
    if unit in _TIME_UNITS:
        return value * _TIME_UNITS[unit]
    m = re.fullmatch(r"([KMGT]?)byte(?:/s(?:econd)?)?", unit)
    return value * _PREFIX[m.group(1)] if m else value


def _size(text: str) -> int | None:
    """'(256, 1, 1)' -> 256; '1,024' -> 1024."""
    text = text.strip()
    parts = text.strip("()").split(", ") if text.startswith("(") else [text]
    nums = [_number(p) for p in parts]
    if not nums or any(n is None for n in nums):
        return None
    total = 1
    for n in nums:
        total *= int(n)  # type: ignore[arg-type]
    return total


def parse_csv(text: str) -> list[NcuKernel]:
    """`ncu --csv --page details` output -> one NcuKernel per profiled launch, in launch order.

    Lines before the header (==PROF== messages, the target's own output) and rows that do not fit
    the header's columns are skipped, so stray output of the profiled program cannot break the parse.
    """
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID","Process ID"')), None)
    if start is None:
        return []
    reader = csv.reader(lines[start:])
    header = next(reader)
    col = {name: i for i, name in enumerate(header)}
    kernels: dict[int, tuple[NcuKernel, dict[str, tuple[str, str]], list[str]]] = {}
    for row in reader:
        # Metric rows stop after 'Metric Value' (the rule columns are left off); pad them.
        if not row or not row[0].isdigit() or len(row) > len(header) or len(row) <= col["Metric Value"]:
            continue
        row += [""] * (len(header) - len(row))
        kid = int(row[0])
        if kid not in kernels:
            k = NcuKernel(id=kid, name=row[col["Kernel Name"]])
            k.block, k.grid = _size(row[col["Block Size"]]), _size(row[col["Grid Size"]])
            kernels[kid] = (k, {}, [])
        _, metrics, rules = kernels[kid]
        name = row[col["Metric Name"]]
        if name:
            section = row[col["Section Name"]]
            key = f"{section}/{name}" if name in ("Memory Throughput",) else name
            metrics[key] = (row[col["Metric Value"]], row[col["Metric Unit"]])
        elif "Rule Description" in col and row[col["Rule Description"]]:
            rules.append(row[col["Rule Description"]])
    return [_fill(k, m, r) for k, m, r in (kernels[i] for i in sorted(kernels))]


def _fill(k: NcuKernel, m: dict[str, tuple[str, str]], rules: list[str]) -> NcuKernel:
    def get(name: str) -> float | None:
        return _number(*m[name]) if name in m else None

    k.duration_us = get("Duration")
    k.dram_pct, k.l2_pct = get("DRAM Throughput"), get("L2 Cache Throughput")
    k.l1_pct, k.sm_pct = get("L1/TEX Cache Throughput"), get("Compute (SM) Throughput")
    k.mem_pct = get("GPU Speed Of Light Throughput/Memory Throughput")
    k.issue_pct = get("Issue Slots Busy")
    regs = get("Registers Per Thread")
    k.registers = int(regs) if regs is not None else None
    k.waves = get("Waves Per SM")
    k.occupancy_pct, k.theoretical_occupancy_pct = get("Achieved Occupancy"), get("Theoretical Occupancy")
    k.spill_requests = get("Local Memory Spilling Requests")
    k.cpi = get("Warp Cycles Per Issued Instruction")
    read, write = get("dram__bytes_read.sum"), get("dram__bytes_write.sum")
    rate = get("Memory Workload Analysis/Memory Throughput")  # DRAM bytes per second
    if read is not None and write is not None:
        k.dram_bytes = read + write
    elif rate is not None and k.duration_us:
        k.dram_bytes = rate * k.duration_us * 1e-6
    ffma = get("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum")
    if ffma is not None:
        k.flops = 2 * ffma + (get("smsp__sass_thread_inst_executed_op_fadd_pred_on.sum") or 0.0) + \
            (get("smsp__sass_thread_inst_executed_op_fmul_pred_on.sum") or 0.0)
    k.tensor_pct = get("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active")
    if k.theoretical_occupancy_pct is not None and k.theoretical_occupancy_pct < 100:
        limits = {label: get(metric) for metric, label in _LIMITS if get(metric) is not None}
        if limits:
            low = min(limits.values())
            k.occupancy_limiter = "+".join(label for label, v in limits.items() if v == low)
    stalls = {r: v for name in m if (mm := _STALL_METRIC.fullmatch(name)) and (r := mm.group(1)) in STALLS
              and (v := get(name))}
    for text in rules:
        if (top := _TOP_PIPE.match(text)) and k.top_pipe is None:
            k.top_pipe, k.top_pipe_pct = top.group(1), float(top.group(2))
        if (st := _STALL_RULE.search(text)) and not any(_STALL_METRIC.fullmatch(n) for n in m):
            reason = next((r for phrase, r in _STALL_PHRASES if phrase in st.group(2)), "other")
            stalls[reason] = stalls.get(reason, 0.0) + float(st.group(1))
    k.stalls = dict(sorted(stalls.items(), key=lambda kv: -kv[1]))
    if k.tensor_pct is None and k.top_pipe and "tensor" in k.top_pipe.lower():
        k.tensor_pct = k.top_pipe_pct
    return k


def failure(text: str) -> str | None:
    """ncu's own reason for profiling nothing (permissions, unknown metric, ...), or None."""
    errors = [ln.strip() for ln in text.splitlines() if ln.startswith("==ERROR==")]
    if any("ERR_NVGPUCTRPERM" in e for e in errors):
        return "no permission to read GPU performance counters (ERR_NVGPUCTRPERM)"
    return errors[0][:200] if errors else None


def unknown_option(text: str, option: str) -> bool:
    """True when ncu refused a command-line option (an older ncu than the one it was written for)."""
    return any(option in ln for ln in text.splitlines() if ln.startswith("==ERROR=="))


def unknown_metric(text: str) -> bool:
    """True when ncu refused one of METRICS (the retry then asks for the sections only)."""
    return any("metric" in ln.lower() for ln in text.splitlines() if ln.startswith("==ERROR=="))

"""Who holds the GPU's memory while a command runs: each process's peak, sampled from nvidia-smi.

    python3 tests/gpu/watch_memory.py -- COMMAND ...

An out-of-memory error inside a sandboxed child names the device's total and "this process" by
a pid its own PID namespace does not share; this names the holder by host pid, uid and command.
Prints the command's output, then one line per process that held device memory, largest first.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path


def _sample(peaks: dict[int, int], who: dict[int, str], stop: threading.Event) -> None:
    while not stop.is_set():
        out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory",
                              "--format=csv,noheader,nounits"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            pid, _, mib = line.partition(",")
            if pid.strip().isdigit() and mib.strip().isdigit():
                peaks[int(pid)] = max(peaks.get(int(pid), 0), int(mib))
                if int(pid) not in who:
                    who[int(pid)] = _describe(int(pid))
        stop.wait(0.5)


def _describe(pid: int) -> str:
    try:
        uid = next(ln.split()[1] for ln in Path(f"/proc/{pid}/status").read_text().splitlines()
                   if ln.startswith("Uid:"))
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:160]
        return f"uid {uid}: {cmd}"
    except (OSError, StopIteration):
        return "(gone)"


def main() -> int:
    cmd = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else sys.argv[1:]
    peaks: dict[int, int] = {}
    who: dict[int, str] = {}
    stop = threading.Event()
    t = threading.Thread(target=_sample, args=(peaks, who, stop), daemon=True)
    t.start()
    rc = subprocess.call(cmd)
    stop.set()
    t.join()
    for pid, mib in sorted(peaks.items(), key=lambda x: -x[1]):
        print(f"peak {mib / 1024:6.1f} GiB  pid {pid}  {who[pid]}")
    return rc


if __name__ == "__main__":
    raise SystemExit(main())

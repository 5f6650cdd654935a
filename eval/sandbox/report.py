"""What the sandbox gives this host, in words: `kernelskill eval --sandbox-report`, one line per
layer (active, or missing and why) and one for the boundary between judge and candidate."""

from __future__ import annotations

from .env import BASELINE_UID, NOBODY
from .layers import Layers, probe


def report(layers: Layers | None = None) -> list[str]:
    """One line per layer of `layers` (this host's probe by default): active, or missing and why
    (for `kernelskill eval --sandbox-report`)."""
    layers = layers or probe()
    active = {"env": "allowlisted environment, HOME/TMPDIR in scratch, run token",
              "net": "own network namespace (loopback down)",
              "pid": "own PID namespace: every descendant dies with the child",
              "mount": "read-only file system but scratch and the compile caches, home empty but import "
                       "folders, hidden credentials and kernelskill state, /run without sockets, "
                       "private /tmp; a candidate process sees only system folders and what it "
                       "imports from, and compiles into caches of its own",
              "uid": f"candidate processes run as uid {NOBODY} (baselines {BASELINE_UID}), the judge "
                     "as the caller",
              "caps": "uid 0 with every capability dropped",
              "seccomp": "candidate processes: no socket but AF_UNIX, no ptrace or other process's "
                         "memory, no mount/unshare/setns, no io_uring/bpf/keyctl",
              "rlimits": "core 0, open files, file size 256 MiB, CPU time; address space on cpu only"}
    if "pid" not in layers.namespaces:
        active["env"] += " (descendants found by token; supervisor is a child subreaper)"
    if layers.userns:  # not root: the namespaces come with a user namespace of the run's own
        for name in ("net", "pid", "mount"):
            active[name] += " (inside a user namespace of the run's own)"
        active["caps"] = ("uid 0 of that user namespace (the caller's uid outside) with every "
                          "capability dropped")
    lines = []
    for name, what in active.items():
        why = layers.missing.get(name)
        state = f"active: {what}" if not why else f"{'off' if why.startswith('not ') else 'missing'}: {why}"
        lines.append(f"{name:8s} {state}")
    return [*lines, f"{'boundary':8s} active: {boundary(layers)}"]


def boundary(layers: Layers) -> str:
    """What stands between a candidate process and its judge on this host, in one line."""
    walls = ["the judge is non-dumpable (no ptrace, /proc/PID/mem or environ of it without "
             "CAP_SYS_PTRACE)"]
    if "pid" in layers.namespaces:
        walls.append("the candidate's own PID namespace (the judge is not addressable)")
    if layers.uid is not None:
        walls.append(f"another uid ({NOBODY})")
    elif layers.drop_caps:
        walls.append("no capability (no CAP_SYS_PTRACE, CAP_KILL)")
    if layers.seccomp:
        walls.append("seccomp (no ptrace, process_vm_readv, network sockets)")
    if "mount" in layers.namespaces:
        walls.append("own mount namespace (the judge's files, /tmp and /dev/shm out of view)")
    return "; ".join(walls)

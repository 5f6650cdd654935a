"""A seccomp filter for processes that run candidate code: the kernel refuses, whatever Python does.

Loaded by the supervisor (supervisor.py, `python -I -S`, standard library and ctypes only) and
installed in the child just before it execs, after no_new_privs; it survives execve and binds
every descendant. What it refuses, with EPERM:
- sockets of any family but AF_UNIX: no network stack at all, whatever the namespace allows.
  Unix sockets stay (the CUDA driver talks to nvidia-persistenced through one); which of them a
  candidate can reach is the mount layer's business (paths.view_masks: /run, /tmp, /var
  and /dev's sockets out of its view).
- ptrace, process_vm_readv/writev, pidfd_getfd: another process's memory or descriptors.
- mount, unshare, setns: a view of the file system or of processes other than the one given.
- keyctl, bpf, userfaultfd, io_uring: kernel surfaces a forward never needs (io_uring would
  open and connect without the filtered system calls).
A system call of another ABI (a 32-bit `int 0x80` on x86_64) kills the process: the numbers
below would not mean the same calls there.
"""

from __future__ import annotations

import ctypes
import platform

# (audit arch, {name: number}) per machine; names are what the docstring promises.
_ARCH = {
    "x86_64": (0xC000003E, {"socket": 41, "ptrace": 101, "process_vm_readv": 310,
                            "process_vm_writev": 311, "pidfd_getfd": 438, "mount": 165,
                            "unshare": 272, "setns": 308, "keyctl": 250, "bpf": 321,
                            "userfaultfd": 323, "io_uring_setup": 425, "io_uring_enter": 426,
                            "io_uring_register": 427}),
    "aarch64": (0xC00000B7, {"socket": 198, "ptrace": 117, "process_vm_readv": 270,
                             "process_vm_writev": 271, "pidfd_getfd": 438, "mount": 40,
                             "unshare": 97, "setns": 268, "keyctl": 219, "bpf": 280,
                             "userfaultfd": 282, "io_uring_setup": 425, "io_uring_enter": 426,
                             "io_uring_register": 427}),
}
_LD_W_ABS, _JEQ_K, _RET_K = 0x20, 0x15, 0x06
_RET_KILL_PROCESS, _RET_ALLOW, _RET_ERRNO = 0x80000000, 0x7FFF0000, 0x00050000
_EPERM = 1
_AF_UNIX = 1
_ARG0 = 16  # seccomp_data.args[0], its low 32 bits (little-endian): socket()'s address family
_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2


class _Insn(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte),
                ("k", ctypes.c_uint32)]


class _Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Insn))]


def supported() -> str:
    """'' when this machine's filter is known, else why not."""
    return "" if platform.machine() in _ARCH else f"no system call table for {platform.machine()}"


def program() -> list[tuple[int, int, int, int]]:
    """The BPF program as (code, jt, jf, k): check the ABI; socket() passes for AF_UNIX only;
    then one jump per refused call."""
    arch, calls = _ARCH[platform.machine()]
    nrs = sorted(nr for name, nr in calls.items() if name != "socket")
    n = len(nrs)
    prog = [(_LD_W_ABS, 0, 0, 4), (_JEQ_K, 1, 0, arch), (_RET_K, 0, 0, _RET_KILL_PROCESS),
            (_LD_W_ABS, 0, 0, 0),
            (_JEQ_K, 0, 2, calls["socket"]),  # 4: socket() -> 5, else to the refused calls at 7
            (_LD_W_ABS, 0, 0, _ARG0),
            (_JEQ_K, n, n + 1, _AF_UNIX)]  # 6: allow (at 7 + n) or refuse (at 8 + n)
    # Test i (at 7 + i) jumps over the remaining n - 1 - i tests and the allow to the refusal.
    prog += [(_JEQ_K, n - i, 0, nr) for i, nr in enumerate(nrs)]
    return prog + [(_RET_K, 0, 0, _RET_ALLOW), (_RET_K, 0, 0, _RET_ERRNO | _EPERM)]


def install() -> None:
    """Install the filter on this process (and, after execve, its program and descendants)."""
    libc = ctypes.CDLL(None, use_errno=True)
    insns = (_Insn * len(prog := program()))(*(_Insn(*i) for i in prog))
    fprog = _Prog(len(prog), insns)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP)")

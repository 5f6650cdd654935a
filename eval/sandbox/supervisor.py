"""The sandbox's supervisor: `python -I -S supervisor.py SPEC -- CMD...`, evaluator code only.

It runs before any candidate code and sits between the evaluator and the child. Inside the
namespaces util-linux `unshare` made (when the host allows: eval/sandbox/layers.py decides) it is PID 1
of its own PID namespace, so every descendant dies when it exits; without one it is a child
subreaper, so every orphaned descendant becomes its child and is killed here. With a mount
namespace it first makes every mount read-only, empties the home but for the import folders,
hides credential and cache paths, empties /run of its sockets, gives /tmp a private tmpfs (but
for the import folders that live there, read-only) and binds the scratch folder back writable.
Then it forks the child, which sets its rlimits, drops all capabilities (and the uid when the
spec names one) and execs CMD. When the child ends (or on SIGTERM, or when its lifeline pipe
from the evaluator closes: the evaluator ended the run or died) it kills whatever the child
left behind and writes the child's wait status to the spec's status fd: as PID 1 it cannot
re-raise a signal on itself.

ctypes is used for mount(2), prctl(2) and capset(2), which the standard library lacks; it is
imported here, in trusted code, never in the candidate's process.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import re
import resource
import signal
import stat
import sys
import threading
import time

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND = 1, 2, 4, 8, 32, 4096
MS_NOATIME, MS_NODIRATIME, MS_REC, MS_RELATIME = 1024, 2048, 16384, 1 << 21
_KEEP = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC, "noatime": MS_NOATIME,
         "nodiratime": MS_NODIRATIME, "relatime": MS_RELATIME}
# Kernel file systems the CUDA driver needs as they are (device nodes, /dev/shm, /proc); /sys is
# read-only, as in any container runtime: the driver only reads it.
_UNTOUCHED = ("/proc", "/dev")
# Kernel knobs a uid 0 without capabilities may still write (file modes are its only guard):
# sysctls such as core_pattern, the SysRq trigger; read-only, as container runtimes keep them.
_PROC_READ_ONLY = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs")
PR_SET_PDEATHSIG, PR_CAPBSET_DROP, PR_SET_SECUREBITS = 1, 24, 28
PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 36, 38, 47, 4
# noroot + no_setuid_fixup + keep_caps_locked + no_cap_ambient_raise, each locked: uid 0 never
# regains a capability, not even through execve of a root-owned or set-uid program.
SECUREBITS = 0xEF

_libc = ctypes.CDLL(None, use_errno=True)


class SetupError(RuntimeError):
    pass


def _check(rc: int, what: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise SetupError(f"{what}: {os.strerror(err)}")


def _mount(src: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = (lambda s: None if s is None else s.encode())
    _check(_libc.mount(enc(src), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)),
           f"mount {target}")


def _unescape(field: str) -> str:
    """mountinfo writes space, tab, newline and backslash as octal escapes (\\040)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def _mounts() -> list[tuple[str, int]]:
    """(mount point, flags to keep) of every mount a path still reaches, in mount order (parents
    first). A mount with a later one at its point or above it is shadowed: inside a judge's
    namespace the home it masked, when the home lives under /tmp, lies under its private /tmp,
    while a folder of the same name on that /tmp is no mount point (a remount there fails)."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            parts = line.split()
            point, opts = _unescape(parts[4]), parts[5].split(",")
            out.append((point, sum(_KEEP.get(o, 0) for o in opts)))
    return [(p, k) for i, (p, k) in enumerate(out) if not any(_under(p, (q,)) for q, _ in out[i + 1:])]


def _under(path: str, roots: tuple[str, ...]) -> bool:
    return any(path == r or path.startswith(r + "/") for r in roots)


def setup_mounts(scratch: str, hide: list[str], masks: list[tuple[str, list[str]]],
                 writable: tuple[str, ...] = (), tmp_keep: tuple[str, ...] = (),
                 private_shm: bool = False, proc_read_only: bool = True) -> None:
    """Everything read-only but the kernel file systems; the user's home empty but for the
    folders the child imports from; hidden paths empty; /run without sockets; /tmp private but
    for the folders the child imports from (`tmp_keep`, read-only); the scratch folder (our
    working directory) and the `writable` folders (the compile caches) bound back at their own
    paths, writable. `proc_read_only`: the kernel knobs under /proc bound read-only (off for a
    judge in a user namespace: see spec.child_spec)."""
    # Opened before anything is masked, so a cache folder under /tmp or the home is still found.
    keep_fds = [(os.open(p, os.O_RDONLY | os.O_DIRECTORY), p) for p in writable if os.path.isdir(p)]
    for point, keep in _mounts():
        if not _under(point, _UNTOUCHED) and os.path.lexists(point):
            _mount(None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | keep)
    for folder, keep in masks:  # the home; for a candidate also the non-system folders
        _mask_keeping(folder, [*keep, scratch])
    for path in hide:
        if os.path.isdir(path):
            _mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=000")
        elif os.path.exists(path):
            _mount("/dev/null", path, None, MS_BIND)
            _mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY)
    for path in _PROC_READ_ONLY if proc_read_only else ():
        if os.path.exists(path):
            _mount(path, path, None, MS_BIND)
            _mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY)
    for path in _block_devices():  # the raw disk would bypass every read-only mount
        _mount("/dev/null", path, None, MS_BIND)
    for run_dir in ("/run", "/var/run"):
        _mask_keeping(run_dir, _run_keep(run_dir))
    if os.path.isdir("/tmp") and not os.path.islink("/tmp"):
        # A writable tmpfs; what is kept was remounted read-only above (hidden paths included).
        _mask_keeping("/tmp", list(tmp_keep), "size=1g,mode=1777", read_only=False)
    if private_shm:
        # A /dev/shm of this run alone: what the run leaves there goes with its namespace, and it
        # sees no other run's (a candidate process inherits its judge's, for the CUDA handover).
        _mount("tmpfs", os.path.realpath("/dev/shm"), "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
    os.makedirs(scratch, exist_ok=True)  # under /tmp it lives on the new tmpfs: a mount point
    _mount(".", scratch, None, MS_BIND)  # "." is still the real scratch folder (our cwd)
    _mount(None, scratch, None, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV)
    for fd, path in keep_fds:
        os.makedirs(path, exist_ok=True)  # on the new /tmp; in a masked home it is kept (env)
        _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND)
        _mount(None, path, None, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV)
        os.close(fd)
    os.chdir(scratch)


def _mask_keeping(folder: str, keep: list[str], data: str = "size=1m,mode=755",
                  read_only: bool = True) -> None:
    """An empty tmpfs over `folder` (read-only unless asked), with the paths in `keep` (under it)
    bound back as they were (read-only by then)."""
    if os.path.islink(folder) or not os.path.isdir(folder) or folder == "/":
        return
    inside = sorted({p for p in keep if _under(p, (folder,)) and p != folder and os.path.exists(p)})
    outermost = [p for p in inside if not any(_under(p, (q,)) for q in inside if q != p)]
    held = []
    for path in outermost:
        with contextlib.suppress(FileNotFoundError):  # removed since it was listed: nothing to keep
            held.append((path, os.open(path, os.O_PATH)))
    _mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, data)
    for path, fd in held:
        if os.path.isdir(f"/proc/self/fd/{fd}"):
            os.makedirs(path, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            open(path, "a").close()
        try:
            _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
        except SetupError:
            # A folder removed after it was opened (a daemon's under /run going away) cannot be
            # bound; it stays masked. Anything still linked is a real failure.
            if os.stat(f"/proc/self/fd/{fd}").st_nlink:
                raise
        os.close(fd)
    if read_only:
        _mount(None, folder, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, data)


def _run_keep(folder: str) -> list[str]:
    """/run holds the host's Unix sockets (docker, containerd, dbus, systemd), and a read-only
    mount does not stop connect(); the NVIDIA daemons' folders (nvidia-persistenced, fabric
    manager) stay, and so does /dev/shm when it is a link into /run."""
    if not os.path.isdir(folder):
        return []
    keep = [os.path.join(folder, n) for n in os.listdir(folder) if n.startswith(("nvidia", "shm"))]
    return keep + [os.path.realpath("/dev/shm")]


def _block_devices() -> list[str]:
    """Block device nodes under /dev (disks, partitions, loop devices; the GPU's are char nodes)
    and Unix sockets there (/dev/log): a read-only mount does not stop connect()."""
    out = []
    for root, _dirs, files in os.walk("/dev"):
        if root.startswith("/dev/shm"):
            continue
        for name in files:
            path = os.path.join(root, name)
            with contextlib.suppress(OSError):
                mode = os.lstat(path).st_mode
                if stat.S_ISBLK(mode) or stat.S_ISSOCK(mode):
                    out.append(path)
    return out


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def drop_capabilities() -> None:
    """uid 0 without any capability: no mount, no remount rw, no ptrace of the evaluator, no
    reading another process's memory or environment; securebits keep it so across execve."""
    _check(_libc.prctl(PR_SET_SECUREBITS, SECUREBITS, 0, 0, 0), "securebits")
    with open("/proc/sys/kernel/cap_last_cap") as f:
        last = int(f.read())
    for cap in range(last + 1):
        _check(_libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), "capability bounding set")
    _libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)  # EINVAL on kernels < 4.3
    hdr, data = _CapHeader(0x20080522, 0), (_CapData * 2)()
    _check(_libc.capset(ctypes.byref(hdr), data), "capset")


def _exec_child(spec: dict, cmd: list[str]) -> None:
    """In the forked child: limits, credentials, then the command. Never returns."""
    try:
        os.close(spec["status_fd"])
        if spec.get("lifeline_fd") is not None:
            os.close(spec["lifeline_fd"])
        for name, (soft, hard) in spec["rlimits"].items():
            resource.setrlimit(getattr(resource, name), (soft, hard))
        if spec.get("uid") is not None:
            os.setgroups([])
            os.setgid(spec["gid"])
            os.setuid(spec["uid"])  # clears every capability on its own
        elif spec.get("drop_caps"):
            drop_capabilities()
        _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
        if spec.get("seccomp"):
            _seccomp().install()  # last: it refuses mount and unshare, which are done by now
        # After the credential change, which clears it: the child dies with its supervisor.
        _check(_libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "pdeathsig")
        os.execv(cmd[0], cmd)
    except BaseException as e:  # noqa: BLE001 - the one line is the child's outcome
        os.write(2, f"kernelskill sandbox: cannot start the child: {e}\n".encode())
        os._exit(126)


def _seccomp():  # noqa: ANN202 - a module loaded by path
    """seccomp.py, beside this file: the filter's tables are easier to read in a module of their own."""
    return _beside("seccomp")


def _tree():  # noqa: ANN202 - a module loaded by path
    """proc_tree.py, beside this file: the descendants, killed or paused."""
    return _beside("proc_tree")


_LOADED: dict[str, object] = {}


def _beside(name: str):  # noqa: ANN202 - a module loaded by path
    """A module beside this file, loaded once: run as `python -I -S FILE`, the package is not
    importable here."""
    if name not in _LOADED:
        import importlib.util

        spec = importlib.util.spec_from_file_location(
            f"sandbox_{name}", os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        _LOADED[name] = mod
    return _LOADED[name]


PAUSE, RESUME = b"S", b"C"
"""Bytes the evaluator may write on the lifeline: stop every process of the child's, or let them
go on (eval/sandbox/pause.py)."""
PAUSED, UNPAUSED = b"paused\n", b"unpaused\n"
"""The supervisor's answer to PAUSE on the status pipe, which the child cannot write."""


def _reap(block: bool) -> None:
    while True:
        try:
            if os.waitpid(-1, 0 if block else os.WNOHANG)[0] == 0:
                return
        except ChildProcessError:
            return


def kill_descendants() -> None:
    """SIGKILL every live descendant, generation by generation (a killed parent's children come
    to us, the subreaper or PID 1), until only zombies are left; then reap them."""
    if os.readlink("/proc/self") != str(os.getpid()):
        return  # /proc belongs to another PID namespace: its pids are not ours to kill
    for _ in range(10_000):
        pids = _tree().children_of(os.getpid())
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        _reap(block=False)
        time.sleep(0.001)
    _reap(block=True)


def _lifeline(fd: int, main: int, status_fd: int) -> None:
    """The evaluator holds the other end of this pipe: EOF means it ended the run (kill_all) or
    died without ending it. Either way the child goes, and with it everything it started. Before
    that it may write PAUSE (answered PAUSED or UNPAUSED on the status pipe) and RESUME."""
    while True:
        try:
            data = os.read(fd, 64)
        except InterruptedError:
            continue
        except OSError:
            break
        if not data:
            break
        for byte in data:
            if byte == PAUSE[0]:
                ok = _tree().stop_descendants()
                with contextlib.suppress(OSError):
                    os.write(status_fd, PAUSED if ok else UNPAUSED)
            elif byte == RESUME[0]:
                _tree().continue_descendants()
    with contextlib.suppress(ProcessLookupError):
        os.kill(main, signal.SIGKILL)


def supervise(spec: dict, cmd: list[str]) -> int:
    if spec.get("mount"):
        setup_mounts(spec["scratch"], spec["hide"], spec.get("masks", []),
                     tuple(spec.get("writable", ())), tuple(spec.get("tmp_keep", ())),
                     bool(spec.get("private_shm")), spec.get("proc_read_only", True))
    if spec.get("subreaper"):
        _check(_libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), "subreaper")
    main = os.fork()
    if main == 0:
        _exec_child(spec, cmd)
    signal.signal(signal.SIGTERM, lambda *_: os.kill(main, signal.SIGKILL))
    if spec.get("lifeline_fd") is not None:
        threading.Thread(target=_lifeline, args=(spec["lifeline_fd"], main, spec["status_fd"]),
                         daemon=True).start()
    status = None
    while status is None:
        try:
            pid, st = os.wait()
        except ChildProcessError:
            break
        if pid == main:
            status = st
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    kill_descendants()
    os.write(spec["status_fd"], f"{status if status is not None else -1}\n".encode())
    return os.waitstatus_to_exitcode(status) if status is not None else 125


def main() -> int:
    spec, cmd = json.loads(sys.argv[1]), sys.argv[3:]
    try:
        return supervise(spec, cmd)
    except SetupError as e:  # a layer the probe found working failed now: refuse to run the child
        os.write(2, f"kernelskill sandbox: {e}\n".encode())
        return 125


if __name__ == "__main__":
    code = main()
    sys.exit(code if code >= 0 else 128 - code)

"""Which GPU buffer handovers survive which OS boundary between a judge and its candidate process.

    python tests/gpu/boundary_probe.py [--non-dumpable]   (as root, on a GPU host; prints a table)

The judge (this process) owns three buffers and hands each to a child three ways: torch's CUDA IPC
(`_share_cuda_`, as eval/candidate/wire.py did), the driver's legacy IPC handle alone (cuIpcOpenMemHandle,
no /dev/shm reference counter), and a cuMem allocation exported as a POSIX file descriptor
(inherited like one sent with SCM_RIGHTS). Each child runs under one combination of boundaries:
its own PID and mount namespaces, another uid, a private /dev/shm, a seccomp filter refusing new
sockets, an overlay over a read-only compile cache. Each row says whether the child could read
the buffer, write it back (the judge checks), import torch, start CUDA and compile a Triton kernel.
"""

from __future__ import annotations

import ctypes
import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import time

N = 1 << 20
NOBODY = 65534
_cu = ctypes.CDLL("libcuda.so.1")


def _ck(rc: int, what: str) -> None:
    if rc != 0:
        raise RuntimeError(f"{what}: CUresult {rc}")


class Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class AllocFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class Prop(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int),
                ("location", Location), ("win32HandleMetaData", ctypes.c_void_p),
                ("allocFlags", AllocFlags)]


class IpcHandle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_char * 64)]


class AccessDesc(ctypes.Structure):
    _fields_ = [("location", Location), ("flags", ctypes.c_int)]


def _prop() -> Prop:
    p = Prop()
    p.type, p.requestedHandleTypes = 1, 1  # pinned device memory, POSIX fd handle
    p.location = Location(1, 0)  # device 0
    return p


def _gran(size: int) -> int:
    g = ctypes.c_size_t()
    _ck(_cu.cuMemGetAllocationGranularity(ctypes.byref(g), ctypes.byref(_prop()), 0), "granularity")
    return (size + g.value - 1) // g.value * g.value


def _map(handle: int, size: int) -> int:
    ptr = ctypes.c_uint64()
    _ck(_cu.cuMemAddressReserve(ctypes.byref(ptr), ctypes.c_size_t(size), ctypes.c_size_t(0),
                                ctypes.c_uint64(0), ctypes.c_uint64(0)), "reserve")
    _ck(_cu.cuMemMap(ptr, ctypes.c_size_t(size), ctypes.c_size_t(0), ctypes.c_uint64(handle),
                     ctypes.c_uint64(0)), "map")
    desc = AccessDesc(Location(1, 0), 3)
    _ck(_cu.cuMemSetAccess(ptr, ctypes.c_size_t(size), ctypes.byref(desc), ctypes.c_size_t(1)), "access")
    return ptr.value


class _View:
    def __init__(self, ptr: int, n: int):
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": "<f4", "data": (ptr, False),
                                         "version": 3, "strides": None}


def _tensor(ptr: int, n: int):
    import torch
    return torch.as_tensor(_View(ptr, n), device="cuda")


# ---- the child ----------------------------------------------------------------------------------
def seccomp(variant: str):  # noqa: ANN201 - a module loaded by path
    """eval/sandbox/seccomp.py's filter ('real'), or a variant: which rule does CUDA need gone?
    Loaded (as root) before the uid changes; installed by the caller after it."""
    import importlib.util
    import platform
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "..", "..", "eval", "sandbox", "seccomp.py")
    spec = importlib.util.spec_from_file_location("sandbox_seccomp", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    arch, calls = mod._ARCH[platform.machine()]
    if variant == "ptrace only":  # no socket rule (its number never matches), no other rule
        mod._ARCH[platform.machine()] = (arch, {"socket": 0xFFFF, "ptrace": calls["ptrace"],
                                                "process_vm_readv": calls["process_vm_readv"]})
    if variant == "no socket at all":
        mod._AF_UNIX = 0xFFFF  # no family matches: every socket() refused
    return mod


def child(cfg: dict) -> dict:
    out: dict = {}
    libc = ctypes.CDLL(None, use_errno=True)
    filt = seccomp(cfg["seccomp"]) if cfg.get("seccomp") else None
    if cfg.get("private_shm"):
        rc = libc.mount(b"tmpfs", b"/dev/shm", b"tmpfs", ctypes.c_ulong(2 | 4), b"size=64m,mode=1777")
        out["private_shm"] = rc == 0 or os.strerror(ctypes.get_errno())
    if cfg.get("overlay"):
        o = cfg["overlay"]
        opts = f"lowerdir={o['lower']},upperdir={o['upper']},workdir={o['work']}".encode()
        rc = libc.mount(b"overlay", o["target"].encode(), b"overlay", ctypes.c_ulong(0), opts)
        out["overlay"] = rc == 0 or os.strerror(ctypes.get_errno())
    if cfg.get("uid"):
        os.setgroups([])
        os.setgid(cfg["uid"])
        os.setuid(cfg["uid"])
    if filt is not None:
        filt.install()
    out["uid"], out["pid"] = os.getuid(), os.getpid()
    t0 = time.time()
    import torch
    out["import_s"] = round(time.time() - t0, 2)
    try:
        torch.zeros(1, device="cuda")
        out["cuda"] = True
    except Exception as e:  # noqa: BLE001
        out["cuda"] = f"{type(e).__name__}: {str(e)[:160]}"
        return out
    h = cfg["handles"]
    for name, fn in (("torch_ipc", _open_torch), ("legacy_ipc", _open_legacy), ("cumem_fd", _open_fd)):
        try:
            t = fn(h[name])
            s = float(t.sum())
            t.mul_(2)
            torch.cuda.synchronize()
            out[name] = f"ok sum={s:.0f}"
        except Exception as e:  # noqa: BLE001
            out[name] = f"{type(e).__name__}: {str(e)[:160]}"
    try:
        import triton
        import triton.language as tl

        @triton.jit
        def _add1(x, n, BLOCK: tl.constexpr):
            i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(x + i, tl.load(x + i, mask=i < n) + 1, mask=i < n)

        y = torch.zeros(1000, device="cuda")
        _add1[(4,)](y, 1000, BLOCK=256)
        out["triton"] = f"ok {float(y.sum()):.0f}"
    except Exception as e:  # noqa: BLE001
        out["triton"] = f"{type(e).__name__}: {str(e)[:160]}"
    try:
        import socket
        socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        out["new_socket"] = "allowed"
    except OSError as e:
        out["new_socket"] = f"refused: {e.strerror}"
    return out


def _open_torch(spec):
    import torch
    st = torch.UntypedStorage._new_shared_cuda(*spec)
    return torch.empty(0, dtype=torch.float32, device="cuda").set_(st, 0, (N,), (1,))


def _open_legacy(handle: bytes):
    ptr = ctypes.c_uint64()
    fn = _cu.cuIpcOpenMemHandle_v2
    fn.argtypes = [ctypes.POINTER(ctypes.c_uint64), IpcHandle, ctypes.c_uint]  # the handle by value
    _ck(fn(ctypes.byref(ptr), IpcHandle.from_buffer_copy(handle), 1), "cuIpcOpenMemHandle")
    return _tensor(ptr.value, N)


def _open_fd(spec):
    fd, size = spec
    handle = ctypes.c_uint64()
    _ck(_cu.cuMemImportFromShareableHandle(ctypes.byref(handle), ctypes.c_void_p(fd), 1), "import")
    return _tensor(_map(handle.value, size), N)


# ---- the judge ----------------------------------------------------------------------------------
def judge(dumpable: bool) -> None:
    import torch

    if not dumpable:  # as the real judge: no ptrace, no /proc/PID/mem, no pidfd_getfd of it
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)

    torch.zeros(1, device="cuda")
    pool = torch.cuda.MemPool()
    with torch.cuda.use_mem_pool(pool):
        a = torch.ones(N, device="cuda")
    bptr = ctypes.c_uint64()
    _ck(_cu.cuMemAlloc_v2(ctypes.byref(bptr), ctypes.c_size_t(N * 4)), "cuMemAlloc")
    b = _tensor(bptr.value, N)
    torch.cuda.synchronize()
    spec = a.untyped_storage()._share_cuda_()
    rc_name = spec[4].decode() if isinstance(spec[4], bytes) else str(spec[4])
    legacy = IpcHandle()
    _ck(_cu.cuIpcGetMemHandle(ctypes.byref(legacy), ctypes.c_uint64(bptr.value)), "cuIpcGetMemHandle")
    size = _gran(N * 4)
    handle = ctypes.c_uint64()
    _ck(_cu.cuMemCreate(ctypes.byref(handle), ctypes.c_size_t(size), ctypes.byref(_prop()),
                        ctypes.c_uint64(0)), "cuMemCreate")
    fd = ctypes.c_int()
    _ck(_cu.cuMemExportToShareableHandle(ctypes.byref(fd), ctypes.c_uint64(handle.value), 1,
                                         ctypes.c_uint64(0)), "export")
    c = _tensor(_map(handle.value, size), N)
    c.fill_(1)
    torch.cuda.synchronize()
    os.set_inheritable(fd.value, True)
    handles = {"torch_ipc": spec, "legacy_ipc": bytes(legacy), "cumem_fd": (fd.value, size)}
    print(f"torch rc file: {rc_name!r}", flush=True)
    for shm in ("/dev/shm" + rc_name, "/dev/shm/" + rc_name.lstrip("/")):
        if os.path.exists(shm):
            os.chmod(shm, 0o666)  # only so that the uid rows test the IPC itself

    tmp = tempfile.mkdtemp(prefix="probe-")
    os.chmod(tmp, 0o755)
    lower, upper, work, target = (os.path.join(tmp, d) for d in ("lower", "upper", "work", "cache"))
    for d in (lower, upper, work, target):
        os.makedirs(d)
    for d in (upper, work):
        os.chown(d, NOBODY, NOBODY)
    overlay = {"lower": lower, "upper": upper, "work": work, "target": target}
    unshare = [shutil.which("unshare"), "--fork", "--kill-child", "--pid", "--mount", "--mount-proc"]
    rows = [("plain", [], {}),
            ("ns + nobody", unshare, {"uid": NOBODY}),
            ("ns+net+nobody+shm, real seccomp", [*unshare, "--net"],
             {"uid": NOBODY, "private_shm": True, "seccomp": "real"}),
            ("same, seccomp ptrace only", [*unshare, "--net"],
             {"uid": NOBODY, "private_shm": True, "seccomp": "ptrace only"}),
            ("same, seccomp no socket at all", [*unshare, "--net"],
             {"uid": NOBODY, "private_shm": True, "seccomp": "no socket at all"}),
            ("same + overlay cache", [*unshare, "--net"],
             {"uid": NOBODY, "private_shm": True, "seccomp": "real", "overlay": overlay}),
            ]
    results = []
    for label, prefix, cfg in rows:
        a.fill_(1), b.fill_(1), c.fill_(1)
        torch.cuda.synchronize()
        cfg = dict(cfg, handles=handles)
        env = dict(os.environ, HOME=tmp, TRITON_CACHE_DIR=target if "overlay" in cfg else
                   os.path.join(tmp, f"tc{len(results)}"))
        os.makedirs(env["TRITON_CACHE_DIR"], exist_ok=True)
        os.chown(env["TRITON_CACHE_DIR"], NOBODY, NOBODY)
        path = os.path.join(tmp, "cfg.pkl")
        with open(path, "wb") as f:
            pickle.dump(cfg, f)
        os.chmod(path, 0o644)
        t0 = time.time()
        p = subprocess.run([*prefix, sys.executable, __file__, "--child", path], env=env, cwd=tmp,
                           capture_output=True, text=True, pass_fds=(fd.value,), timeout=240)
        wall = round(time.time() - t0, 1)
        try:
            got = json.loads(p.stdout.strip().splitlines()[-1])
        except (IndexError, ValueError):
            tail = (p.stderr or p.stdout).strip().splitlines()[-3:]
            got = {"error": f"rc {p.returncode}: " + " / ".join(tail)}
        torch.cuda.synchronize()
        got["written_back"] = [float(t.sum()) == 2 * N for t in (a, b, c)]
        got["wall_s"] = wall
        results.append((label, got))
        print(label, json.dumps(got), flush=True)
    print("\n| boundary | torch_ipc | legacy_ipc | cumem_fd | written (t,l,f) | triton | socket | s |")
    print("|---|---|---|---|---|---|---|---|")
    for label, g in results:
        cells = [str(g.get(k, g.get("error", "")))[:40] for k in
                 ("torch_ipc", "legacy_ipc", "cumem_fd")]
        print(f"| {label} | {' | '.join(cells)} | {g.get('written_back')} | "
              f"{str(g.get('triton'))[:30]} | {g.get('new_socket')} | {g.get('wall_s')} |")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        with open(sys.argv[2], "rb") as f:
            print(json.dumps(child(pickle.load(f)), default=str), flush=True)
    else:
        judge("--non-dumpable" not in sys.argv)

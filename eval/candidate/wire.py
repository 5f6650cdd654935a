"""The judge <-> candidate pipe: length-prefixed messages on a Unix socket, tensors by handle.

Judge -> candidate messages are pickles (the candidate trusts the judge); candidate -> judge
messages are JSON only, so nothing the candidate sends is ever unpickled by the judge. Tensors
never travel in a message: the judge owns every shared buffer (inputs and output slots) and
hands the candidate a handle once: a file descriptor sent with SCM_RIGHTS, of shared memory on
the CPU or of a cuMem allocation on the GPU (eval/candidate/cuda_share.py), so the handover crosses uids and
PID and mount namespaces. torch's CUDA IPC handle is the fallback where the driver lacks cuMem's
descriptors (it needs the judge's uid and /dev/shm on the other side).
"""

from __future__ import annotations

import json
import os
import pickle
import socket
import struct
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # torch is imported where tensors are handled: the judge's entry starts the
    import torch  # candidate process before it imports torch itself

_HEADER = struct.Struct("!QI")  # payload length, number of file descriptors
# Rationale: the largest message is a handover of a few dozen handles (a few kB) or a
# description of an output; 64 MiB leaves room for anything legitimate and stops a flood.
MAX_MESSAGE = 64 << 20
MAX_FDS = 253  # SCM_RIGHTS' limit per message on Linux


class LinkClosed(Exception):
    """The other side closed the pipe (it exited or died)."""


def _send(sock: socket.socket, payload: bytes, fds: list[int]) -> None:
    head = _HEADER.pack(len(payload), len(fds))
    if fds:
        socket.send_fds(sock, [head], fds)
    else:
        sock.sendall(head)
    sock.sendall(payload)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            raise LinkClosed("the other side closed the pipe")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _recv(sock: socket.socket) -> tuple[bytes, list[int]]:
    head, fds, _, _ = socket.recv_fds(sock, _HEADER.size, MAX_FDS)
    if not head:
        raise LinkClosed("the other side closed the pipe")
    if len(head) < _HEADER.size:
        head += _recv_exact(sock, _HEADER.size - len(head))
    size, nfds = _HEADER.unpack(head)
    if size > MAX_MESSAGE or nfds != len(fds):
        for fd in fds:
            socket.close(fd)
        raise ValueError(f"malformed message: {size} bytes, {nfds} fds announced, {len(fds)} sent")
    return _recv_exact(sock, size), list(fds)


def send_to_candidate(sock: socket.socket, msg: dict[str, Any], fds: list[int] | None = None) -> None:
    """Send `msg` with `fds` (from `export`, owned by the message: closed here once sent)."""
    try:
        _send(sock, pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL), fds or [])
    finally:
        for fd in fds or []:
            socket.close(fd)


def recv_from_judge(sock: socket.socket) -> tuple[dict[str, Any], list[int]]:
    payload, fds = _recv(sock)
    return pickle.loads(payload), fds


def send_to_judge(sock: socket.socket, msg: dict[str, Any]) -> None:
    _send(sock, json.dumps(msg, allow_nan=True).encode(), [])


def recv_from_candidate(sock: socket.socket) -> dict[str, Any]:
    """A JSON object from the candidate; fds it tries to send are closed, never used."""
    payload, fds = _recv(sock)
    for fd in fds:
        socket.close(fd)
    msg = json.loads(payload.decode())
    if not isinstance(msg, dict):
        raise ValueError("the candidate sent something other than a JSON object")
    return msg


# ---- shared tensors ------------------------------------------------------------------------
_BLOCK = "_kernelskill_cumem_block"  # the cuMem allocation behind a judge's shared CUDA tensor
def export(t: torch.Tensor, fds: list[int]) -> dict[str, Any]:
    """A handle to the judge's shared tensor `t` (from `shared_like`); its descriptor, a new one
    owned by the message, goes to `fds`."""
    storage = t.untyped_storage()
    spec = {"dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape),
            "stride": list(t.stride()), "offset": t.storage_offset(), "device": t.device.type}
    if not storage.nbytes():  # nothing to share (and no handle exists for an empty allocation)
        return spec
    block = getattr(t, _BLOCK, None)
    if block is not None:
        spec["cumem"] = {"fd_index": len(fds), "size": block.size}
        fds.append(block.export_fd())
        return spec
    if t.is_cuda:
        (device, handle, size, offset_bytes, rc_handle, rc_offset, ev_handle,
         ev_sync) = storage._share_cuda_()
        spec["cuda"] = (device, handle, size, offset_bytes, rc_handle, rc_offset, ev_handle, ev_sync)
        return spec
    fd, size = storage._share_fd_cpu_()
    spec["fd_index"], spec["nbytes"] = len(fds), size
    fds.append(os.dup(fd))  # the storage keeps its own
    return spec


def open_shared(spec: dict[str, Any], fds: list[int]) -> torch.Tensor:
    """The candidate's view of a tensor the judge exported."""
    import torch

    dtype = getattr(torch, spec["dtype"])
    if "cumem" in spec:
        from . import cuda_share
        block = cuda_share.import_fd(fds[spec["cumem"]["fd_index"]], spec["cumem"]["size"],
                                     torch.cuda.current_device())
        return cuda_share.tensor(block, dtype, spec["shape"], spec["stride"], spec["offset"])
    if "cuda" in spec:
        storage = torch.UntypedStorage._new_shared_cuda(*spec["cuda"])
    elif "fd_index" in spec:
        storage = torch.UntypedStorage._new_shared_fd_cpu(fds[spec["fd_index"]], spec["nbytes"])
    else:
        return torch.empty_strided(spec["shape"], spec["stride"], dtype=dtype, device=spec["device"])
    return torch.empty(0, dtype=dtype, device=storage.device).set_(
        storage, spec["offset"], spec["shape"], spec["stride"])


def shared_like(t: torch.Tensor, pool: Any = None) -> torch.Tensor:
    """A copy of `t` with its strides (a transposed input stays transposed) in memory the judge
    may share: CPU shared memory, or on CUDA a private memory pool, so that an IPC handle (which
    covers a whole allocator segment) never exposes the judge's own tensors (the reference's
    outputs, the private input copies)."""
    import torch

    t = t.detach()
    # A broadcast (stride 0) input cannot be written element by element: it is made dense.
    stride = t.stride() if 0 not in t.stride() else torch.empty(t.shape).stride()
    if t.is_cuda and t.numel():
        from . import cuda_share
        try:
            block = cuda_share.create(cuda_share.span_bytes(list(t.shape), list(stride), t.element_size()),
                                      t.device.index if t.device.index is not None else
                                      torch.cuda.current_device())
        except (cuda_share.CudaShareError, OSError):
            block = None  # no cuMem descriptors here: torch's IPC below (same uid only)
        if block is not None:
            out = cuda_share.tensor(block, t.dtype, list(t.shape), list(stride))
            setattr(out, _BLOCK, block)
            out.copy_(t)
            return out
    if t.is_cuda:
        with torch.cuda.use_mem_pool(pool):
            out = torch.empty_strided(t.shape, stride, dtype=t.dtype, device=t.device)
    else:
        out = torch.empty_strided(t.shape, stride, dtype=t.dtype).share_memory_()
    out.copy_(t)
    return out

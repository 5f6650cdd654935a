"""Device memory the judge shares with a candidate process as a file descriptor, through the CUDA
driver's virtual memory API (cuMemCreate with a POSIX fd handle, cuMemImportFromShareableHandle).

Why not torch's CUDA IPC (`_share_cuda_`): its importer needs a reference-counter file in the
exporter's /dev/shm, readable by the importer's uid, and the driver's legacy IPC handle is opened
by process id. A candidate process under another uid, in PID and mount namespaces of its own,
has neither. A file descriptor needs nothing: it travels over the judge's one socket
(SCM_RIGHTS) like the CPU's shared-memory descriptors, and gives the candidate exactly the
allocations it was handed, never a segment of the judge's allocator.

Each buffer is one allocation rounded up to the driver's granularity (2 MiB on Hopper), viewed by
torch through __cuda_array_interface__; the allocation is unmapped and released when the last
tensor over it is freed.
"""

from __future__ import annotations

import ctypes
import functools
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

_POSIX_FD, _PINNED, _ON_DEVICE, _READ_WRITE = 1, 1, 1, 3


class _Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class _Prop(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int),
                ("location", _Location), ("win32HandleMetaData", ctypes.c_void_p),
                ("allocFlags", _AllocFlags)]


class _Access(ctypes.Structure):
    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


class CudaShareError(RuntimeError):
    pass


@functools.cache
def _cu() -> ctypes.CDLL:
    return ctypes.CDLL("libcuda.so.1")


def _ck(rc: int, what: str) -> None:
    if rc != 0:
        raise CudaShareError(f"{what} failed (CUresult {rc})")


def _prop(device: int) -> _Prop:
    p = _Prop()
    p.type, p.requestedHandleTypes, p.location = _PINNED, _POSIX_FD, _Location(_ON_DEVICE, device)
    return p


def _granular(nbytes: int, device: int) -> int:
    g = ctypes.c_size_t()
    _ck(_cu().cuMemGetAllocationGranularity(ctypes.byref(g), ctypes.byref(_prop(device)), 0),
        "cuMemGetAllocationGranularity")
    return max(1, -(-nbytes // g.value)) * g.value


class Block:
    """One mapped allocation: created here (the judge) or imported from a descriptor (the candidate)."""

    def __init__(self, handle: int, size: int, device: int):
        self.handle, self.size, self.device, self.ptr = handle, size, device, 0
        ptr = ctypes.c_uint64()
        try:
            _ck(_cu().cuMemAddressReserve(ctypes.byref(ptr), ctypes.c_size_t(size), ctypes.c_size_t(0),
                                          ctypes.c_uint64(0), ctypes.c_uint64(0)), "cuMemAddressReserve")
            self.ptr = ptr.value
            _ck(_cu().cuMemMap(ctypes.c_uint64(self.ptr), ctypes.c_size_t(size), ctypes.c_size_t(0),
                               ctypes.c_uint64(handle), ctypes.c_uint64(0)), "cuMemMap")
            access = _Access(_Location(_ON_DEVICE, device), _READ_WRITE)
            _ck(_cu().cuMemSetAccess(ctypes.c_uint64(self.ptr), ctypes.c_size_t(size),
                                     ctypes.byref(access), ctypes.c_size_t(1)), "cuMemSetAccess")
        except BaseException:
            self.close()
            raise

    def export_fd(self) -> int:
        """A new descriptor of this allocation, for one receiver (the caller closes it once sent)."""
        fd = ctypes.c_int(-1)
        _ck(_cu().cuMemExportToShareableHandle(ctypes.byref(fd), ctypes.c_uint64(self.handle),
                                               _POSIX_FD, ctypes.c_uint64(0)), "cuMemExportToShareableHandle")
        return fd.value

    def close(self) -> None:
        if self.ptr:
            _cu().cuMemUnmap(ctypes.c_uint64(self.ptr), ctypes.c_size_t(self.size))
            _cu().cuMemAddressFree(ctypes.c_uint64(self.ptr), ctypes.c_size_t(self.size))
            self.ptr = 0
        if self.handle:
            _cu().cuMemRelease(ctypes.c_uint64(self.handle))
            self.handle = 0

    def __del__(self) -> None:
        self.close()


def create(nbytes: int, device: int) -> Block:
    """A new allocation of at least `nbytes` on `device` (its CUDA context already current)."""
    size = _granular(nbytes, device)
    handle = ctypes.c_uint64()
    _ck(_cu().cuMemCreate(ctypes.byref(handle), ctypes.c_size_t(size), ctypes.byref(_prop(device)),
                          ctypes.c_uint64(0)), "cuMemCreate")
    return Block(handle.value, size, device)


def import_fd(fd: int, size: int, device: int) -> Block:
    """The allocation behind a descriptor the judge sent (the descriptor stays the caller's)."""
    handle = ctypes.c_uint64()
    _ck(_cu().cuMemImportFromShareableHandle(ctypes.byref(handle), ctypes.c_void_p(fd), _POSIX_FD),
        "cuMemImportFromShareableHandle")
    return Block(handle.value, size, device)


class _Interface:
    """What torch.as_tensor reads (__cuda_array_interface__, bytes); it keeps the block alive for
    as long as torch keeps it, i.e. as long as any tensor over the allocation lives."""

    def __init__(self, block: Block):
        self.block = block
        self.__cuda_array_interface__ = {"shape": (block.size,), "typestr": "|u1",
                                         "data": (block.ptr, False), "version": 3, "strides": None}


def tensor(block: Block, dtype: torch.dtype, shape: list[int], stride: list[int],
           offset: int = 0) -> torch.Tensor:
    """A tensor of `dtype` over the block (element `offset`, `shape` and `stride` in elements)."""
    import torch

    raw = torch.as_tensor(_Interface(block), device=f"cuda:{block.device}")
    itemsize = torch.empty((), dtype=dtype).element_size()
    return raw[: block.size // itemsize * itemsize].view(dtype).as_strided(shape, stride, offset)


def span_bytes(shape: list[int], stride: list[int], itemsize: int, offset: int = 0) -> int:
    """Bytes a strided view reaches, from the start of its storage."""
    if any(s == 0 for s in shape):
        return offset * itemsize
    return (offset + 1 + sum((n - 1) * s for n, s in zip(shape, stride, strict=True))) * itemsize


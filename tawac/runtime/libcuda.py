"""The CUDA driver calls of the launch path, made through ctypes on libcuda itself.

cuda-python's wrappers turn every argument into Python objects: a `cuTensorMapEncodeTiled`
with its lists of `cuuint64_t` costs tens of microseconds, a `cuLaunchKernelEx` with its
config object several more. A launch needs three calls, all with plain integers and
pointers, so the launcher makes them directly (the way Triton's generated C launcher
does). Module loading, function attributes and launches with a cluster shape
(`cuLaunchKernelEx` and its config structure) stay on cuda-python.

The enum values (data types, swizzles, ...) are read from cuda-python's enums when the
library is opened, so nothing here restates the driver's headers.
"""

from __future__ import annotations

import ctypes
import sys
from functools import cache

_u32, _u64, _ptr, _int = ctypes.c_uint32, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_int


class LibCuda:
    """`launch`, `encode_tiled` and `error_name` over libcuda's C entry points."""

    def __init__(self, lib: ctypes.CDLL):
        self._launch = lib.cuLaunchKernel
        self._launch.argtypes = [_ptr, *([ctypes.c_uint] * 7), _ptr, _ptr, _ptr]
        self._launch.restype = _int
        self._encode = lib.cuTensorMapEncodeTiled
        self._encode.argtypes = [_ptr, _int, _u32, _ptr, _ptr, _ptr, _ptr, _ptr] + [_int] * 4
        self._encode.restype = _int
        self._error_name = lib.cuGetErrorName
        self._error_name.argtypes = [_int, ctypes.POINTER(ctypes.c_char_p)]
        self._error_name.restype = _int

    def launch(self, func: int, grid, block, smem: int, stream: int, params: int) -> int:
        """cuLaunchKernel; returns the CUresult (0 on success)."""
        return self._launch(func, *grid, *block, smem, stream, params, None)

    def encode_tiled(self, out: int, dtype: int, rank: int, address: int, arrays, enums) -> int:
        """cuTensorMapEncodeTiled into the 128 bytes at `out`; `arrays` = (globalDim,
        globalStrides, boxDim, elementStrides) ctypes arrays, `enums` = (interleave,
        swizzle, l2 promotion, oob fill). Returns the CUresult."""
        dims, strides, box, elem = arrays
        return self._encode(out, dtype, rank, address, dims, strides, box, elem, *enums)

    def error_name(self, code: int) -> str:
        name = ctypes.c_char_p()
        if self._error_name(code, ctypes.byref(name)) != 0 or name.value is None:
            return f"CUresult {code}"
        return name.value.decode()


@cache
def libcuda() -> LibCuda | None:
    """The driver library, or None where there is none (a launch then fails with a
    LaunchError that says so)."""
    names = ("nvcuda.dll",) if sys.platform == "win32" else ("libcuda.so.1", "libcuda.so")
    for name in names:
        try:
            return LibCuda(ctypes.CDLL(name))
        except (OSError, AttributeError):
            continue
    return None

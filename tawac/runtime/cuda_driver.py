"""The CUDA driver as the launcher reaches it.

Out: `_driver()`, cuda-python's driver module (module loading, function attributes,
launches with a cluster shape, the tensor-map enums); `_check`, which turns a failed
`CUresult` into a `LaunchError`; `_lib()`, the ctypes calls on libcuda itself of the hot
path (`tawac.runtime.libcuda`: cuLaunchKernel, cuTensorMapEncodeTiled); `_sm_count`,
a device's multiprocessors (persistent grids and workspace sizes count in them), and
`sm_count`, the current device's (the target's count where there is no GPU).
cuda-python and torch are imported only when these are called.
"""

from __future__ import annotations

import functools

from tawac.runtime.arguments import LaunchError
from tawac.runtime.libcuda import libcuda


def _driver():
    try:
        from cuda.bindings import driver
    except ImportError:
        try:
            from cuda import cuda as driver  # cuda-python < 12.6
        except ImportError as e:
            raise LaunchError("cuda-python (cuda.bindings) is not installed") from e
    return driver


def _check(result: tuple, what: str) -> tuple:
    """Raises LaunchError unless the CUresult (first element) is CUDA_SUCCESS."""
    err, *rest = result
    if int(err) != 0:
        name = getattr(err, "name", str(err))
        raise LaunchError(f"{what} failed: {name}")
    return tuple(rest)


def _lib():
    lib = libcuda()
    if lib is None:
        raise LaunchError("the CUDA driver library (libcuda) was not found")
    return lib


@functools.cache
def _sm_count(device: int) -> int:
    import torch

    return torch.cuda.get_device_properties(device).multi_processor_count


def sm_count() -> int:
    """The current GPU's multiprocessors; the target's count where there is no GPU (what a
    launch decision made then shows is its choice on that GPU)."""
    import torch

    if torch.cuda.is_available():
        return _sm_count(torch.cuda.current_device())
    from tawac.target.hopper import HOPPER

    return HOPPER.sm_count

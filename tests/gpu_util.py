"""Helpers for GPU tests: skip where no Hopper GPU (or no torch) is present.

from gpu_util import requires_gpu

@pytest.mark.gpu
@requires_gpu
def test_something(): ...
"""

from __future__ import annotations

import functools
import importlib.util

import pytest


@functools.cache
def gpu_available() -> bool:
    """True when torch is installed, sees a CUDA device, and device 0 is compute capability 9.x."""
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    if not torch.cuda.is_available():
        return False
    major, _ = torch.cuda.get_device_capability(0)
    return major == 9


def cuda_python_available() -> bool:
    """True when cuda-python's driver bindings import."""
    try:
        from cuda.bindings import driver  # noqa: F401
    except ImportError:
        try:
            from cuda import cuda  # noqa: F401
        except ImportError:
            return False
    return True


cuda_available = gpu_available

requires_gpu = pytest.mark.skipif(
    not gpu_available(), reason="needs torch and an NVIDIA GPU of compute capability 9.x"
)

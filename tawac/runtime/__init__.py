"""Host-side runtime: launch compiled kernels, interpret tile kernels, run and check them.

`load_kernel`, `Kernel` and `LaunchError` import without torch or cuda-python (those are
imported at launch).  `interpret` and `run_kernel_file` need torch and are imported lazily.

The launcher is `launcher` (`Kernel`, `load_kernel`) and its parts: `arguments` (the
sidecar ABI: parameter packing, sidecar and argument checks, `LaunchError`), `tensor_maps`
(TMA descriptors, padding, L2 promotion), `plans` (grid, workspace shapes, call keys,
shape plans), `graphs` (streams, CUDA graph capture) and `cuda_driver` (the driver calls).
"""

from tawac.runtime.arguments import LaunchError
from tawac.runtime.launcher import Kernel, load_kernel

__all__ = ["Kernel", "LaunchError", "interpret", "load_kernel", "run_kernel_file"]


def __getattr__(name: str):
    if name == "interpret":
        from tawac.runtime.interpret import interpret

        return interpret
    if name == "run_kernel_file":
        from tawac.runtime.runner import run_kernel_file

        return run_kernel_file
    raise AttributeError(f"module 'tawac.runtime' has no attribute {name!r}")

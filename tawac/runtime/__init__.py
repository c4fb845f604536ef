"""Host-side runtime: launch compiled kernels, interpret tile kernels, run and check them.

`load_kernel`, `Kernel` and `LaunchError` import without torch or cuda-python (those are
imported at launch).  `interpret` and `run_kernel_file` need torch and are imported lazily.
"""

from tawac.runtime.launcher import Kernel, LaunchError, load_kernel

__all__ = ["Kernel", "LaunchError", "interpret", "load_kernel", "run_kernel_file"]


def __getattr__(name: str):
    if name == "interpret":
        from tawac.runtime.interpret import interpret

        return interpret
    if name == "run_kernel_file":
        from tawac.runtime.runner import run_kernel_file

        return run_kernel_file
    raise AttributeError(f"module 'tawac.runtime' has no attribute {name!r}")

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


def gemm_operands(m: int, n: int, k: int, seed: int):
    """A GEMM's bf16 A (m x k) and B (n x k) from a seeded generator, and its output C
    (m x n) poisoned with NaN: a launch that leaves an element unwritten shows."""
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=g)
    b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16, generator=g)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    return a, b, c


def gemm_error(a, b, c) -> float:
    """‖C - A Bᵀ‖ / ‖A Bᵀ‖ against the float32 product, after checking that no
    poisoned element of C remains."""
    ref = a.float() @ b.float().T
    assert not c.isnan().any(), "unwritten (poisoned) output elements remain"
    return ((c.float() - ref).norm() / ref.norm()).item()


def load_module(path, name: str | None = None):
    """The Python file `path` imported as a module (an example's or a script's source,
    outside any package), under `name` (default: the file's stem)."""
    from pathlib import Path

    path = Path(path)
    spec = importlib.util.spec_from_file_location(name or path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def loaded_kernel(path, **options):
    """The kernel of the tile program at `path` compiled to a cubin (with `options`) and
    loaded on the GPU, ready to launch."""
    from tawac.compiler import compile_file
    from tawac.runtime import load_kernel

    res = compile_file(path, cubin=True, **options)
    return load_kernel(res.cubin, res.sidecar)


def assert_assembles_without_spills(ptx: str) -> None:
    """ptxas assembles `ptx` without spilling registers (skipped where ptxas is not
    found)."""
    from tawac.support.ptxas import assemble, locate_ptxas

    ptxas = locate_ptxas()
    if ptxas is None:
        pytest.skip("no ptxas")
    _, report = assemble(ptx, ptxas, verbose=True)
    assert "0 bytes spill stores, 0 bytes spill loads" in report, report


def assert_trains_alike(ours_loss, ref_loss, ours, theirs, *, lr, grad_rtol, steps=3):
    """A few SGD steps of `ours_loss(weights)` (through tawac's operators) beside
    `ref_loss(weights)` (torch's) from equal bf16 weights: each step's loss within 2% of
    the reference's and each gradient norm-wise within `grad_rtol` of its, then both
    weight lists stepped by `lr`. Step 0 runs `ours_loss` eagerly, the others under
    `torch.compile(fullgraph=True)`, so a graph break at a custom operator fails."""
    import torch

    compiled = torch.compile(ours_loss, fullgraph=True)
    for i in range(steps):
        loss = (compiled if i else ours_loss)(ours)
        loss.backward()
        want = ref_loss(theirs)
        want.backward()
        assert abs(float(loss) - float(want)) <= 2e-2 * abs(float(want)), (i, loss, want)
        with torch.no_grad():
            for a, b in zip(ours, theirs, strict=True):
                ref = b.grad.float()
                err = float((a.grad.float() - ref).norm() / ref.norm())
                assert err < grad_rtol, f"step {i} grad: relative error {err:.3g}"
                a -= lr * a.grad
                b -= lr * b.grad
                a.grad = b.grad = None

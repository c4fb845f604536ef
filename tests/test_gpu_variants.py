"""Kernels shaped unlike the examples, checked on the GPU against the tile interpreter
(the reference `tawac run` uses): swapped program axes with an f32 output, an MN-major
left operand (A stored KxM), two dots per K step with a split-K start and a ReLU, two
accumulators in one loop (coarse-pipelined) and two sharing their A tile (left alone).

Marked `gpu`; skipped where no Hopper GPU is present.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from gpu_util import requires_gpu

from tawac.driver import compile_file

VARIANTS = Path(__file__).resolve().parent / "data" / "variants"


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(
    ("name", "sizes"),
    [
        ("swapped_axes_f32_out.mlir", {"M": 1000, "N": 700, "K": 300}),
        ("a_transposed.mlir", {"M": 640, "N": 384, "K": 448}),
        ("a_transposed.mlir", {"M": 200, "N": 136, "K": 72}),
        ("two_dots_per_step_relu.mlir", {"M": 512, "N": 384, "K": 640, "k_begin": 128}),
        ("two_dots_per_step_relu.mlir", {"M": 300, "N": 260, "K": 200, "k_begin": 0}),
        ("two_accumulators.mlir", {"M": 384, "N": 256, "K": 576}),
        ("two_accumulators.mlir", {"M": 130, "N": 200, "K": 64}),
        ("two_accumulators_shared_a.mlir", {"M": 256, "N": 384, "K": 320}),
    ],
)
@pytest.mark.parametrize("persistent", [True, False])
def test_variant_matches_interpreter(name, sizes, persistent):
    from tawac.runtime.runner import run_kernel_file

    def compile_fn(p):
        r = compile_file(p, persistent=persistent)
        return r.cubin, r.sidecar, r.kernel

    res = run_kernel_file(VARIANTS / name, sizes, None, compile_fn, rep_ms=5, tol=1e-2)
    assert res["ok"] and not res["nan"], res

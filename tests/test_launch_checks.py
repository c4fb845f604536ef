"""Launch checks that every program's store lands (`tawac.analysis.grid.coverage_checks`,
recorded by `plan`, the sidecar's "checks", docs/abi.md): a store at `program_id * T'`
along a tensor beside the store that sizes the grid needs room for every program; the
launcher refuses a call that would drop some programs' results (a norm backward's partial
sums given fewer rows than programs) instead of returning a wrong sum."""

from __future__ import annotations

from pathlib import Path

import pytest
from gpu_util import requires_gpu

from tawac.compiler import compile_file
from tawac.runtime.arguments import LaunchError, check_shapes, validate_sidecar

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _partials_check(block_m: int) -> dict:
    return {
        "arg": "dw_part",
        "dim": 0,
        "by": 1,
        "at_least": {"cdiv": {"arg": "dx", "dim": 0}, "by": block_m},
    }


@pytest.mark.parametrize("block_m", [1, 8, 64])
def test_a_row_of_partial_sums_a_program_needs_a_row_for_every_program(block_m):
    res = compile_file(
        EXAMPLES / "rmsnorm_bwd.mlir", params={"BLOCK_M": block_m, "BLOCK_N": 256}, cubin=False
    )
    assert res.sidecar["checks"] == [_partials_check(block_m)]
    validate_sidecar(res.sidecar)  # the launcher understands it
    args = res.sidecar["args"]
    m, n = 1000, 333
    shapes = {"x": (m, n), "dy": (m, n), "w": (n,), "rstd": (m,), "dx": (m, n)}
    programs = -(-m // block_m)
    for rows in (programs, programs + 5):
        check_shapes(res.sidecar["checks"], {**shapes, "dw_part": (rows, n)}, args)
    with pytest.raises(LaunchError, match=rf"dw_part.shape\[0\] \(P\) is {programs - 1}: "):
        check_shapes(res.sidecar["checks"], {**shapes, "dw_part": (programs - 1, n)}, args)


def test_stores_that_tile_the_same_rows_check_each_other():
    """The layer norm's y, mean and rstd: the rows of each cover the programs (the grid
    comes from the first store, mean's)."""
    res = compile_file(EXAMPLES / "layernorm.mlir", cubin=False)
    got = {(c["arg"], c["dim"]) for c in res.sidecar["checks"]}
    assert got == {("y", 0), ("rstd_out", 0)}
    args = res.sidecar["args"]
    shapes = {"x": (130, 64), "w": (64,), "b": (64,), "y": (130, 64), "mean_out": (130,)}
    check_shapes(res.sidecar["checks"], {**shapes, "rstd_out": (130,)}, args)
    with pytest.raises(LaunchError, match=r"rstd_out.shape\[0\] \(M\) is 64: the launch runs 3"):
        check_shapes(res.sidecar["checks"], {**shapes, "rstd_out": (64,)}, args)


@pytest.mark.parametrize("name", ["gemm.mlir", "softmax.mlir", "attention.mlir"])
def test_a_kernel_whose_stores_all_size_the_grid_has_no_check(name):
    assert "checks" not in compile_file(EXAMPLES / name, cubin=False).sidecar


@pytest.mark.gpu
@requires_gpu
def test_the_launch_refuses_partial_sums_with_too_few_rows():
    import torch

    import tawac.torch

    k = tawac.torch.kernel(EXAMPLES / "rmsnorm_bwd.mlir", params={"BLOCK_M": 8, "BLOCK_N": 256})
    m, n = 100, 256
    x, dy = (torch.randn(m, n, device="cuda").bfloat16() for _ in range(2))
    w = torch.randn(n, device="cuda").bfloat16()
    rstd = torch.rand(m, device="cuda") + 0.5
    dx = torch.empty_like(x)
    with pytest.raises(LaunchError, match=r"dw_part.shape\[0\] \(P\) is 12: the launch runs 13"):
        k(x, dy, w, rstd, dx, torch.empty(12, n, device="cuda"))
    k(x, dy, w, rstd, dx, torch.empty(13, n, device="cuda"))


_WHOLE_ROW = """
tile.kernel @row_scale(%x: !tile.tensor<?x?xf32, ["M", "N"]>, \
%y: !tile.tensor<?x?xf32, ["M", "N"]>) \
attributes {params = {BLOCK_N = 256}, tawac.checks = [CHECKS]} {
  %c0 = arith.constant 0 : index
  %pid = tile.program_id x
  %t = tile.load %x[%pid, %c0] : !tile.tensor<?x?xf32, ["M", "N"]> -> tensor<1x$BLOCK_Nxf32>
  %s = tile.reduce sum %t, 1 : tensor<1x$BLOCK_Nxf32> -> tensor<1xf32>
  %b = tile.broadcast %s, 0 : tensor<1xf32> -> tensor<1x$BLOCK_Nxf32>
  %r = arith.divf %t, %b : tensor<1x$BLOCK_Nxf32>
  tile.store %r, %y[%pid, %c0] : tensor<1x$BLOCK_Nxf32> -> !tile.tensor<?x?xf32, ["M", "N"]>
  tile.return
}
"""


def test_a_row_held_whole_in_one_block_refuses_a_longer_row(tmp_path):
    """A program that holds a row in one BLOCK_N block states N <= BLOCK_N (`at_most`):
    the launcher refuses a longer row, which the kernel would compute from its first
    BLOCK_N columns only, and takes any shorter one (the tail reads as 0)."""
    src = tmp_path / "row_scale.mlir"
    bound = '{arg = "x", dim = 1, at_most = {const = $BLOCK_N}}'
    src.write_text(_WHOLE_ROW.replace("CHECKS", bound))
    res = compile_file(src, params={"BLOCK_N": 512}, cubin=False)
    assert res.sidecar["checks"] == [{"arg": "x", "dim": 1, "at_most": {"const": 512}}]
    validate_sidecar(res.sidecar)
    args = res.sidecar["args"]
    for n in (1, 300, 512):
        check_shapes(res.sidecar["checks"], {"x": (7, n), "y": (7, n)}, args)
    refused = r"x.shape\[1\] \(N\) is 513: the kernel handles at most 512"
    with pytest.raises(LaunchError, match=refused):
        check_shapes(res.sidecar["checks"], {"x": (7, 513), "y": (7, 513)}, args)


@pytest.mark.parametrize(
    "check",
    [
        '{arg = "x", dim = 1, at_most = {arg = "y", dim = 1}}',
        '{arg = "x", dim = 2, at_most = {const = 4}}',
        '{arg = "w", dim = 0, at_most = {const = 4}}',
    ],
)
def test_a_malformed_bound_is_a_located_error(tmp_path, check):
    from tawac.support.diagnostics import CompileError

    src = tmp_path / "row_scale.mlir"
    src.write_text(_WHOLE_ROW.replace("CHECKS", check))
    with pytest.raises(CompileError, match=r"row_scale.mlir:2:1: error: tawac.checks: expected"):
        compile_file(src, cubin=False)

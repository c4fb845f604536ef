"""`widen` (tawac/passes/widen.py): two 64-row programs of x as one 128-row tile.

On the CPU: the widened 64-row GEMM and attention programs compile to the very PTX of the
same programs written with 128 rows; the kernels it must leave alone are left alone (and
`--widen 2` on them is a located error); the pipeline runs it only where the plan is the
planner's; explain says so. On the GPU (marked `gpu`): widened kernels at ragged sizes
against the tile interpreter, rows past the end included.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from gpu_util import requires_gpu

from tawac.dialects import tile
from tawac.driver import compile_file, parse_file
from tawac.passes import widen
from tawac.schedule.widen import programs_per_tile
from tawac.support.diagnostics import CompileError
from tawac.support.options import PipelineOptions

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
DATA = Path(__file__).resolve().parent / "data"
ROW_KERNEL = DATA / "widen" / "row_scale_mask.mlir"


def _kernel(path: Path, **params) -> tile.KernelOp:
    module = parse_file(path, params=params or None)
    (k,) = [o for o in module.body.block.ops if isinstance(o, tile.KernelOp)]
    return k


def _ptx(path: Path, **params) -> str:
    return compile_file(path, params=params, cubin=False).ptx


@pytest.mark.parametrize(
    ("source", "narrow", "wide"),
    [
        ("gemm.mlir", {"BLOCK_M": 64, "BLOCK_N": 128}, {"BLOCK_M": 128, "BLOCK_N": 128}),
        ("attention.mlir", {"BLOCK_M": 64, "BLOCK_N": 64}, {"BLOCK_M": 128, "BLOCK_N": 64}),
        ("attention_d64.mlir", {"BLOCK_M": 64, "BLOCK_N": 64}, {"BLOCK_M": 128, "BLOCK_N": 64}),
    ],
)
def test_a_widened_program_is_the_128_row_program(source, narrow, wide):
    """The rewrite is the tile program with twice the rows: the PTX is byte-identical."""
    assert _ptx(EXAMPLES / source, **narrow) == _ptx(EXAMPLES / source, **wide)


def test_the_rows_reach_vectors_masks_and_reductions():
    k = _kernel(ROW_KERNEL)
    found = widen.analyse(k)
    assert not isinstance(found, str), found
    assert found.rows == 64
    widen.rewrite(k, found, 2)
    text = str(k)
    assert "tensor<64" not in text
    for t in ("tensor<128x64xbf16>", "tensor<128xf32>", "tensor<128x128xi1>"):
        assert t in text
    # the B tile's rows are columns of the output: not widened
    b_tile = next(o for o in k.walk() if isinstance(o, tile.LoadOp) and o.source.name_hint == "b")
    assert str(b_tile.result.type) == "tensor<128x64xbf16>"  # 128 columns of C, as written
    assert k.attributes[widen.WIDEN_ATTR] is not None


@pytest.mark.parametrize(
    ("path", "params", "why"),
    [
        (ROOT / "corpus" / "attention_causal_blocks.mlir", {}, "used by arith.cmpi"),
        (DATA / "variants" / "swapped_axes_f32_out.mlir", {}, "a dot's N"),
        (EXAMPLES / "gemm_grouped.mlir", {}, "tile.load_index"),
    ],
)
def test_kernels_it_cannot_widen_are_named_and_kept(path, params, why):
    k = _kernel(path, **params)
    found = widen.analyse(k)
    assert isinstance(found, str) and why in found, found
    with pytest.raises(CompileError, match="widen: cannot give one tile 2 programs of x") as e:
        compile_file(path, params=params, cubin=False, widen=2)
    assert e.value.location is not None and path.name in e.value.location
    # auto leaves it as written
    ptx = compile_file(path, params=params, cubin=False).ptx
    assert ptx == compile_file(path, params=params, cubin=False, widen=1).ptx


def test_a_reduction_over_the_rows_is_not_widened():
    text = ROW_KERNEL.read_text().replace(
        "%mx = tile.reduce max %scaled, 1 : tensor<64x128xf32> -> tensor<64xf32>\n"
        "  %mb = tile.broadcast %mx, 0 : tensor<64xf32> -> tensor<64x128xf32>",
        "%mx = tile.reduce max %scaled, 0 : tensor<64x128xf32> -> tensor<128xf32>\n"
        "  %mb = tile.broadcast %mx, 1 : tensor<128xf32> -> tensor<64x128xf32>",
    )
    from tawac.driver import parse_text

    module = parse_text(text, "colmax.mlir")
    (k,) = [o for o in module.body.block.ops if isinstance(o, tile.KernelOp)]
    assert widen.analyse(k) == "the rows are a reduced dimension"


def test_the_rule_widens_one_m64_block_that_fits():
    assert programs_per_tile(64, 49152, 232448) == 2
    assert programs_per_tile(128, 49152, 232448) == 1
    assert programs_per_tile(192, 49152, 232448) == 1
    # d256 attention with 64-row blocks: Q, K and V widened take more than half
    assert programs_per_tile(64, 196608, 232448) == 1


def test_the_pipeline_widens_only_a_plan_the_planner_makes():
    def passes(**options):
        return PipelineOptions(**options).pipeline().split(",")

    assert "widen" in passes()
    for given in ({"stages": 4}, {"consumer_warp_groups": 1}, {"cluster": "2x1"}, {"split_k": 2}):
        assert "widen" not in passes(**given), given
    assert "widen" not in passes(widen=1)
    assert "widen{by=2}," in PipelineOptions(widen=2, stages=4).pipeline()


def test_grouped_heads_are_not_widened():
    """The decode example's 64-row tiles are eight heads' rows (group-heads): kept."""
    res = compile_file(EXAMPLES / "attention_decode.mlir", cubin=False)
    assert res.ptx == compile_file(EXAMPLES / "attention_decode.mlir", cubin=False, widen=1).ptx


def test_explain_and_grid_say_two_programs_per_tile():
    from click.testing import CliRunner

    from tawac.tools.cli import main

    out = CliRunner().invoke(main, ["explain", str(ROW_KERNEL)])
    assert out.exit_code == 0, out.output
    assert "programs per tile: 2 along x as one 128-row tile" in out.output
    assert "cdiv(c.shape[0], 128)" in out.output
    kept = CliRunner().invoke(main, ["explain", str(ROW_KERNEL), "--widen", "1"])
    assert "programs per tile" not in kept.output
    assert "cdiv(c.shape[0], 64)" in kept.output


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(
    ("path", "params", "sizes"),
    [
        (ROW_KERNEL, {}, {"M": 300, "N": 260, "K": 200, "limit": 250}),
        (ROW_KERNEL, {}, {"M": 64, "N": 128, "K": 64, "limit": 64}),
        (EXAMPLES / "gemm.mlir", {"BLOCK_M": 64, "BLOCK_N": 128}, {"M": 333, "N": 520, "K": 200}),
        (
            EXAMPLES / "attention.mlir",
            {"BLOCK_M": 64, "BLOCK_N": 64},
            {"B": 1, "H": 2, "S": 1000, "D": 128, "scale_log2e": 0.12751743},
        ),
    ],
)
def test_widened_kernels_match_the_interpreter(path, params, sizes):
    from tawac.runtime.runner import run_kernel_file

    def compile_fn(p):
        r = compile_file(p, params=params)
        assert r.sidecar["block"] == [384, 1, 1]  # widened: two consumer warp groups
        assert not re.search(r"[1-9]\d* bytes spill", r.ptxas_report), r.ptxas_report
        # the reference is the user's kernel as written (64-row programs)
        return r.cubin, r.sidecar, r.kernel

    res = run_kernel_file(path, sizes, None, compile_fn, rep_ms=5, tol=2e-2)
    assert res["ok"] and not res["nan"], res

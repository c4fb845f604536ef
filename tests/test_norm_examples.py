"""The shipped kernels without MMAs (`examples/softmax.mlir`, `rmsnorm.mlir`,
`rmsnorm_residual.mlir`, `layernorm.mlir`, and the backward passes `layernorm_bwd.mlir`,
`rmsnorm_bwd.mlir` with `column_sum.mlir`): rows of any length through loops over column
blocks. On the CPU, the tile passes keep their meaning (the interpreter before and after,
at ragged sizes) and the interpreter agrees with a float32 torch reference; each compiles
to a producer that streams by TMA and consumers without MMAs that ptxas assembles without
spills. On the GPU, each runs through `tawac.torch` at ragged sizes against torch."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from gpu_util import requires_gpu
from programs import ordered_sums

from tawac.check import baseline, validate_pipeline
from tawac.compiler import compile_file, parse_file
from tawac.driver import kernel_op
from tawac.runtime.interpret import interpret_launch
from tawac.schedule.planner import PREFERRED_DEPTH, ROWS_DEPTH, preferred_depth
from tawac.schedule.widen import programs_per_tile
from tawac.support.options import PipelineOptions
from tawac.tools.explain import explain_module

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
NAMES = ["softmax", "rmsnorm", "rmsnorm_residual", "layernorm"]
#: The backward passes (the row part) and the column sums of their partial weight sums.
BACKWARD = ["layernorm_bwd", "rmsnorm_bwd", "column_sum", "column_sum_pair"]
EPS = 1e-5
#: Ragged check sizes: a partial 64-row block and a partial column block, and a row
#: shorter than one column block.
SIZES = [{"M": 130, "N": 333}, {"M": 70, "N": 100}]


def _inputs(name: str, m: int, n: int, device: str = "cpu", seed: int = 0):
    """The kernel's inputs (bf16 x, and r, w, b where it reads them), as torch tensors."""
    import torch

    g = torch.Generator(device=device).manual_seed(seed)

    def randn(*shape, scale=1.0, shift=0.0):
        t = torch.randn(*shape, device=device, generator=g) * scale + shift
        return t.to(torch.bfloat16)

    x = randn(m, n, scale=3.0, shift=1.0)  # a non-zero mean: a one-pass variance would lose
    if name == "softmax":
        return {"x": x}
    if name == "rmsnorm":
        return {"x": x, "w": randn(n)}
    if name == "rmsnorm_residual":
        return {"x": x, "r": randn(m, n), "w": randn(n)}
    return {"x": x, "w": randn(n), "b": randn(n)}


def _reference(name: str, ins: dict) -> dict:
    """Each output in float32 (the bf16 outputs rounded as the kernel rounds them)."""
    import torch

    x = ins["x"].float()
    if name == "softmax":
        return {"y": torch.softmax(x, dim=1)}
    if name == "layernorm":
        mean = x.mean(dim=1)
        rstd = torch.rsqrt(x.var(dim=1, unbiased=False) + EPS)
        y = (x - mean[:, None]) * rstd[:, None] * ins["w"].float() + ins["b"].float()
        return {"y": y, "mean_out": mean, "rstd_out": rstd}
    out = {}
    if name == "rmsnorm_residual":
        h = (x + ins["r"].float()).to(torch.bfloat16)
        out["h"] = h.float()
        x = h.float()
    out["y"] = x * torch.rsqrt((x * x).mean(dim=1, keepdim=True) + EPS) * ins["w"].float()
    return out


def _default_block_m(name: str) -> int:
    """BLOCK_M of examples/`name`'s default parameters."""
    found = re.search(r"params = \{BLOCK_M = (\d+)", (EXAMPLES / f"{name}.mlir").read_text())
    assert found, name
    return int(found.group(1))


def _check(name: str, got: dict, want: dict) -> None:
    for key, ref in want.items():
        err = float((got[key].float() - ref).norm() / ref.norm())
        assert err < 1e-2, (name, key, err)


@pytest.mark.parametrize("sizes", SIZES, ids=lambda s: f"{s['M']}x{s['N']}")
@pytest.mark.parametrize("name", NAMES + BACKWARD)
def test_the_tile_passes_keep_its_meaning(name, sizes):
    module = parse_file(EXAMPLES / f"{name}.mlir")
    checks = dict(sizes)
    if name in ("rmsnorm", "rmsnorm_residual", "layernorm"):
        checks["eps"] = EPS
    if name.endswith("_bwd"):
        checks["P"] = -(-sizes["M"] // _default_block_m(name))
    if name.startswith("column_sum"):
        checks = {"P": sizes["M"], "N": sizes["N"]}
    base = baseline(module, checks)
    assert validate_pipeline(module, base, program=name)


@pytest.mark.parametrize("name", NAMES)
def test_the_interpreter_agrees_with_torch(name):
    """The program itself (before any pass) against torch: the examples mean what their
    comments say, at a ragged size with a row longer than two column blocks."""
    import torch

    from tawac.dialects import tile

    m, n = 130, 333
    ins = _inputs(name, m, n)
    want = _reference(name, ins)
    module = parse_file(EXAMPLES / f"{name}.mlir")
    kernel = next(o for o in module.walk() if isinstance(o, tile.KernelOp))
    args = {}
    for arg in kernel.body.block.args:
        hint = arg.name_hint
        if hint in ins:
            args[hint] = ins[hint]
        elif hint == "eps":
            args[hint] = EPS
        elif hint in ("mean_out", "rstd_out"):
            args[hint] = torch.full((m,), float("nan"))
        else:
            args[hint] = torch.full((m, n), float("nan"), dtype=torch.bfloat16)
    interpret_launch(kernel, list(args.values()))
    _check(name, {k: args[k] for k in want}, want)


def _backward(name: str, m: int, n: int, device: str, seed: int, block_m: int = 64):
    """(the inputs of `name`'s row kernel, the outputs it is given, torch's dx, dw (and
    db)): autograd through torch's own norm in float32 on the bf16 inputs; the partial
    sums have one row per program of `block_m` rows."""
    import torch
    import torch.nn.functional as F

    ins = _inputs("layernorm" if name == "layernorm_bwd" else "rmsnorm", m, n, device, seed)
    g = torch.Generator(device=device).manual_seed(seed + 1)
    dy = torch.randn(m, n, device=device, generator=g).to(torch.bfloat16)
    x = ins["x"].float().requires_grad_()
    w = ins["w"].float().requires_grad_()
    p = -(-m // block_m)
    nan = float("nan")
    if name == "layernorm_bwd":
        b = ins["b"].float().requires_grad_()
        F.layer_norm(x, (n,), w, b, EPS).backward(dy.float())
        mean = x.detach().mean(dim=1)
        rstd = torch.rsqrt(x.detach().var(dim=1, unbiased=False) + EPS)
        args = [ins["x"], dy, ins["w"], mean, rstd]
        outs = {"dx": torch.full((m, n), nan, device=device).to(torch.bfloat16)}
        outs["dw_part"] = torch.full((p, n), nan, device=device)
        outs["db_part"] = torch.full((p, n), nan, device=device)
        want = {"dx": x.grad, "dw": w.grad, "db": b.grad}
    else:
        F.rms_norm(x, (n,), w, EPS).backward(dy.float())
        rstd = torch.rsqrt((x.detach() ** 2).mean(dim=1) + EPS)
        args = [ins["x"], dy, ins["w"], rstd]
        outs = {"dx": torch.full((m, n), nan, device=device).to(torch.bfloat16)}
        outs["dw_part"] = torch.full((p, n), nan, device=device)
        want = {"dx": x.grad, "dw": w.grad}
    return args, outs, want


# the block shapes benchmarks/bench_rows.py times for the backward's row kernel, and the
# examples' default (64 x 128)
BACKWARD_BLOCKS = [(64, 128), (1, 4096), (2, 2048), (8, 1024), (16, 512), (32, 256)]


@pytest.mark.parametrize("block", [(64, 128), (1, 256), (8, 128)], ids=str)
@pytest.mark.parametrize("name", ["layernorm_bwd", "rmsnorm_bwd"])
def test_the_backward_in_the_interpreter_agrees_with_autograd(name, block):
    """The row kernel and the column sums of its partials against torch's autograd."""
    import torch

    m, n = 130, 333
    bm, bn = block
    args, outs, want = _backward(name, m, n, "cpu", 3, block_m=bm)
    params = {"BLOCK_M": bm, "BLOCK_N": bn}
    interpret_launch(kernel_op(EXAMPLES / f"{name}.mlir", params=params), [*args, *outs.values()])
    got = {"dx": outs["dx"]}
    for part in ("dw", "db"):
        if f"{part}_part" in outs:
            got[part] = torch.full((n,), float("nan")).to(torch.bfloat16)
            column_sum = kernel_op(EXAMPLES / "column_sum.mlir")
            interpret_launch(column_sum, [outs[f"{part}_part"], got[part]])
    _check(name, got, want)


def test_the_column_sum_pair_adds_up_both_partials_as_column_sum_does():
    """column_sum_pair.mlir (layer norm's dw and db in one launch) in the interpreter: each
    output bit for bit the column sum of its partials (the same blocks in the same order)."""
    import torch

    g = torch.Generator().manual_seed(5)
    p, n = 70, 333
    x1, x2 = (torch.randn(p, n, generator=g) for _ in range(2))
    params = {"BLOCK_M": 16, "BLOCK_N": 64}
    pair = [torch.full((n,), float("nan")).to(torch.bfloat16) for _ in range(2)]
    interpret_launch(kernel_op(EXAMPLES / "column_sum_pair.mlir", params=params), [x1, x2, *pair])
    for x, got in zip((x1, x2), pair, strict=True):
        one = torch.full((n,), float("nan")).to(torch.bfloat16)
        interpret_launch(kernel_op(EXAMPLES / "column_sum.mlir", params=params), [x, one])
        assert torch.equal(got, one)
        torch.testing.assert_close(got.float(), x.sum(0), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("name", NAMES + BACKWARD)
def test_it_streams_by_tma_into_consumers_without_mmas(name):
    res = compile_file(EXAMPLES / f"{name}.mlir")
    assert "wgmma" not in res.ptx
    assert "cp.async.bulk.tensor.2d.shared::cluster.global" in res.ptx
    assert "setmaxnreg.inc" in res.ptx


@pytest.mark.parametrize("planner", ["heuristic", "solver", "auto"])
@pytest.mark.parametrize("name", ["softmax", "rmsnorm", "layernorm"])
def test_each_planner_gives_a_row_kernel_the_measured_ring_and_no_widening(name, planner):
    """A kernel streaming 2-d tiles through loops without MMAs: one 64-row program per
    CTA (not two as one 128-row tile) on one consumer warp group, a ring of `ROWS_DEPTH`
    slots (the solver keeps the depth fixed: its model does not price the bytes in
    flight); the row block its loops read again resident, in the deepest ring shared
    memory holds (`reuse-slots`), and `ROWS_DEPTH` deep without it. A GEMM aims for
    `PREFERRED_DEPTH`."""
    source = parse_file(EXAMPLES / f"{name}.mlir")
    plan = explain_module(source, PipelineOptions(schedule=planner))
    assert "widen" not in plan
    assert {r["role"]: r["warp_groups"] for r in plan["roles"]} == {"producer": 1, "consumer": 1}
    rows = [a for a in plan["arefs"] if a["payload"][0].startswith("tensor<64x")]
    assert [a.get("resident") for a in rows] == [True]
    assert rows[0]["depth"] > ROWS_DEPTH
    off = explain_module(
        parse_file(EXAMPLES / f"{name}.mlir"), PipelineOptions(schedule=planner, reuse_slots=False)
    )
    assert [a["depth"] for a in off["arefs"] if a["payload"][0].startswith("tensor<64x")] == [
        ROWS_DEPTH
    ]
    assert not any(a.get("resident") for a in off["arefs"])
    assert programs_per_tile(64, 32768, 232448, streams=True) == 1
    assert programs_per_tile(64, 32768, 232448) == 2
    assert preferred_depth(kernel_op(EXAMPLES / f"{name}.mlir")) == ROWS_DEPTH
    assert preferred_depth(kernel_op(EXAMPLES / "gemm.mlir")) == PREFERRED_DEPTH


@pytest.mark.parametrize(
    ("name", "block_n"),
    # the backward holds two 64 x BLOCK_N f32 tiles (x and dy) at once: 128 columns
    [(name, bn) for name in NAMES for bn in (128, 256)] + [(name, 128) for name in BACKWARD],
)
def test_it_assembles_without_spills(name, block_n):
    res = compile_file(EXAMPLES / f"{name}.mlir", params={"BLOCK_N": block_n}, cubin=True)
    assert "0 bytes spill stores, 0 bytes spill loads" in res.ptxas_report, res.ptxas_report


@pytest.mark.parametrize("block_m", [1, 2, 8, 16, 32])
@pytest.mark.parametrize("block_n", [128, 256])
@pytest.mark.parametrize("name", NAMES)
def test_short_row_blocks_assemble_without_spills(name, block_n, block_m):
    """Fewer rows per program than a warp group's m64 block: the blocked layout, its row
    reductions in the loops over column blocks (refused while a slot release raced the
    warp's reads of the slot: tests/test_slot_release.py), at both column widths the
    shipped tables choose from; and one or two rows, the warps side by side along them."""
    params = {"BLOCK_M": block_m, "BLOCK_N": block_n}
    res = compile_file(EXAMPLES / f"{name}.mlir", params=params, cubin=True)
    assert "wgmma" not in res.ptx
    assert "0 bytes spill stores, 0 bytes spill loads" in res.ptxas_report, res.ptxas_report


# ---- on the GPU


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("block_n", [128, 256])
@pytest.mark.parametrize("n", [1, 100, 333, 4096, 8200])
@pytest.mark.parametrize("m", [1, 77, 1000])
@pytest.mark.parametrize("name", NAMES)
def test_it_matches_torch_on_the_gpu(name, m, n, block_n):
    """Through `tawac.torch` (the outputs allocated by the operator, poisoned with NaN
    first by freeing a NaN tensor of their size), against torch in float32."""
    _forward_on_the_gpu(name, m, n, {"BLOCK_N": block_n})


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("n", [333, 4096])
@pytest.mark.parametrize("m", [1, 77, 1000])
@pytest.mark.parametrize("block_n", [128, 256])
@pytest.mark.parametrize("block_m", [8, 16, 32])
@pytest.mark.parametrize("name", NAMES)
def test_short_row_blocks_match_torch_on_the_gpu(name, block_m, block_n, m, n):
    """8, 16 and 32 rows per program (what the shipped tables choose): the tiles in the
    blocked layout (not whole m64 blocks), stored from registers in 16-byte vectors
    inside the loops over column blocks."""
    _forward_on_the_gpu(name, m, n, {"BLOCK_N": block_n, "BLOCK_M": block_m})


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("n", [333, 5000])
@pytest.mark.parametrize("m", [1, 77])
@pytest.mark.parametrize("block", [(1, 1024), (1, 4096), (2, 2048), (3, 256), (4, 1024)], ids=str)
@pytest.mark.parametrize("name", NAMES)
def test_a_few_rows_a_program_match_torch_on_the_gpu(name, block, m, n):
    """One to three rows a program (a few tokens' rows, each program's whole): the warps
    side by side along the rows, each row reduction's partials combined through shared
    scratch, at ragged sizes (a row shorter than one block, and a partial last block)."""
    bm, bn = block
    _forward_on_the_gpu(name, m, n, {"BLOCK_M": bm, "BLOCK_N": bn})


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("reuse", [True, False])
@pytest.mark.parametrize("n", [2000, 4096, 20000])
@pytest.mark.parametrize("block_m", [8, 16])
@pytest.mark.parametrize("name", NAMES)
def test_rows_kept_on_chip_match_torch_on_the_gpu(name, block_m, n, reuse):
    """`reuse-slots`: 3000 rows, so that each persistent CTA runs several programs (the
    next program's transfers are numbered after the ones this one moved: one per tile
    where the row stays in the ring, one per tile and loop where not); 2000 and 4096
    columns fit in the ring (the later loops read the first's slots), 20000 do not (each
    loop loads its tiles: the same kernel, decided at run time); and without it."""
    params = {"BLOCK_N": 256, "BLOCK_M": block_m}
    _forward_on_the_gpu(name, 3000, n, params, reuse_slots=reuse)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("n", [3000, 8192])
@pytest.mark.parametrize("m", [1, 77, 3000])
@pytest.mark.parametrize("block_n", [4096, 8192])
@pytest.mark.parametrize("name", NAMES)
def test_a_row_spread_over_two_warp_groups_matches_torch_on_the_gpu(name, block_n, m, n):
    """One row a program on two consumer warp groups (`--consumer-warp-groups 2`): all
    eight warps side by side along the row (`BlockedTileLayout.spanning`), its
    reductions combined over both warp groups through shared scratch."""
    params = {"BLOCK_N": block_n, "BLOCK_M": 1}
    _forward_on_the_gpu(name, m, n, params, consumer_warp_groups=2)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("block", [(8, 256), (1, 8192)], ids=str)
@pytest.mark.parametrize("name", NAMES)
def test_rows_longer_than_the_ring_without_held_slots_match_torch_on_the_gpu(name, block):
    """The rows kept on chip above at a row longer than the ring (where, by default, its
    first tiles keep their slots: `hold`), with `hold_slots` off: each loop loads every
    tile, as before the held slots; and the default at 1 x 8192 blocks over 20 tiles a
    row (the softmax's 14 slots, 10 held; the norms' rings, 6 or 7 slots, hold none)."""
    bm, bn = block
    n = 20000 if bm == 8 else 160000
    params = {"BLOCK_N": bn, "BLOCK_M": bm}
    _forward_on_the_gpu(name, 300, n, params, hold_slots=False)
    _forward_on_the_gpu(name, 300, n, params)


def _forward_on_the_gpu(
    name: str, m: int, n: int, params: dict, source: Path | None = None, **options
) -> None:
    import torch

    import tawac.torch

    source = source or EXAMPLES / f"{name}.mlir"
    key = (name, str(source), *sorted(params.items()), *sorted(options.items()))
    if key not in _KERNELS:
        _KERNELS[key] = tawac.torch.kernel(source, params=params, **options)
    k = _KERNELS[key]
    ins = _inputs(name, m, n, device="cuda", seed=m * 7 + n)
    want = _reference(name, ins)
    torch.full((4 * m * n + 64,), float("nan"), device="cuda")  # freed: the outputs' blocks
    args = list(ins.values()) + ([EPS] if name != "softmax" else [])
    out = k(*args)
    outs = out if isinstance(out, tuple) else (out,)
    torch.cuda.synchronize()
    names = [a["name"] for a in k.args if a.get("access") == "write"]
    got = dict(zip(names, outs, strict=True))
    for key_, t in got.items():
        assert not torch.isnan(t.float()).any(), (name, key_)
    _check(name, got, want)


def ordered(name: str, folder: Path) -> Path:
    """The example `name` with the reassoc of its running sums taken off
    (`programs.ordered_sums`: each block's sum kept in the loop), written into `folder`."""
    path = folder / f"{name}.mlir"
    path.write_text(ordered_sums(f"{name}.mlir"))
    return path


@pytest.mark.parametrize("name,sunk", [("rmsnorm", 1), ("rmsnorm_residual", 1), ("layernorm", 2)])
@pytest.mark.parametrize("spelling", ["reassoc", "ordered"])
def test_the_norms_sums_are_sunk_and_agree(name, sunk, spelling, tmp_path):
    """The norms as shipped (their running sums marked reassoc): every running sum sunk;
    without the mark, every one kept; and the tile passes (sink-reductions among them)
    keep their meaning in the interpreter."""
    from tawac.analysis.grid import from_attr
    from tawac.compiler import run_pipeline
    from tawac.passes.sink_reductions import SINK_ATTR

    params = {"BLOCK_M": 8, "BLOCK_N": 512}
    source = EXAMPLES / f"{name}.mlir" if spelling == "reassoc" else ordered(name, tmp_path)
    module = parse_file(source, params=params)
    validate_pipeline(module, baseline(module, {"M": 19, "N": 1100}), program=name)
    run_pipeline(module, "sink-reductions")
    (kernel,) = [op for op in module.walk() if op.name == "tile.kernel"]
    got = from_attr(kernel.attributes[SINK_ATTR])
    if spelling == "reassoc":
        assert got == {"sunk": sunk, "kept": []}
    else:
        assert got["sunk"] == 0 and len(got["kept"]) == sunk


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("n", [333, 5000])
@pytest.mark.parametrize("m", [1, 77, 1000])
@pytest.mark.parametrize(
    "block", [(8, 256), (8, 1024), (16, 512), (64, 128), (1, 2048), (2, 1024)], ids=str
)
@pytest.mark.parametrize("name", ["rmsnorm", "rmsnorm_residual", "layernorm"])
def test_sums_without_reassoc_match_torch_on_the_gpu(name, block, m, n, tmp_path):
    """The norms with the reassoc of their running sums taken off: each block's sum
    reduced in the loop, in order, at 256-1024 columns a block and at ragged sizes,
    outputs poisoned, against float32 torch (the shipped, sunk form: the tests above)."""
    bm, bn = block
    source = ordered(name, tmp_path)
    _forward_on_the_gpu(name, m, n, {"BLOCK_M": bm, "BLOCK_N": bn}, source=source)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("n", [100, 333, 4096])
@pytest.mark.parametrize("m", [1, 77, 1000, 3000])
@pytest.mark.parametrize("block", BACKWARD_BLOCKS, ids=str)
@pytest.mark.parametrize("name", ["layernorm_bwd", "rmsnorm_bwd"])
def test_the_backward_matches_autograd_on_the_gpu(name, block, m, n):
    """The row kernel at each of the benchmark's block shapes (outputs poisoned with NaN),
    then the column sums of its partials (`column_sum`, or `column_sum_pair` for layer
    norm's two; their tuning tables), in place through `tawac.torch`, against torch's
    autograd in float32."""

    import tawac.torch

    bm, bn = block
    if (name, block) not in _KERNELS:
        params = {"BLOCK_M": bm, "BLOCK_N": bn}
        _KERNELS[(name, block)] = tawac.torch.kernel(EXAMPLES / f"{name}.mlir", params=params)
    args, outs, want = _backward(name, m, n, "cuda", m * 7 + n, block_m=bm)
    _KERNELS[(name, block)](*args, *outs.values())
    _sum_partials_and_check(name, outs, want, n)


_KERNELS: dict = {}


def _sum_partials_and_check(name: str, outs: dict, want: dict, n: int) -> None:
    """The row kernel's partial weight sums added up on the GPU (`column_sum`, or
    `column_sum_pair` for the layer norm's two in one launch; their tuning tables) into
    NaN-poisoned gradients, then dx, dw (and db) against `want`."""
    import torch

    import tawac.torch

    for stem in ("column_sum", "column_sum_pair"):
        if stem not in _KERNELS:
            _KERNELS[stem] = tawac.torch.kernel(EXAMPLES / f"{stem}.mlir")
    got = {"dx": outs["dx"]}
    for part in ("dw", "db"):
        if f"{part}_part" in outs:
            got[part] = torch.full((n,), float("nan"), device="cuda").to(torch.bfloat16)
    if name.startswith("layernorm"):  # both column sums in one launch
        _KERNELS["column_sum_pair"](outs["dw_part"], outs["db_part"], got["dw"], got["db"])
    else:
        _KERNELS["column_sum"](outs["dw_part"], got["dw"])
    torch.cuda.synchronize()
    for key, t in got.items():
        assert not torch.isnan(t.float()).any(), (name, key)
    _check(name, got, want)


# ---- 1-d loads beside 2-d tiles: streamed, read from the slot in runs


@pytest.mark.parametrize("params", [{}, {"BLOCK_M": 16, "BLOCK_N": 256}], ids=["64x128", "16x256"])
@pytest.mark.parametrize("name", ["rmsnorm", "rmsnorm_residual", "layernorm", *BACKWARD[:2]])
def test_the_1d_loads_stream_through_the_producer(name, params):
    """The weight (and the backward's saved statistics) come by TMA, not as the
    consumer's own global loads."""
    ptx = compile_file(EXAMPLES / f"{name}.mlir", params=params).ptx
    assert "ld.global" not in ptx
    assert "cp.async.bulk.tensor.1d" in ptx


# ---- the one-read backward: a whole row a block, persistent programs carrying the partials

ROWS_BWD = ["layernorm_bwd_rows", "rmsnorm_bwd_rows"]


def _rows_backward(name: str, m: int, n: int, p: int, device: str, seed: int):
    """`_backward`'s inputs and references for the one-read form, its partial sums
    `p` x N (one row a program: the caller's choice of programs)."""
    import torch

    args, outs, want = _backward(name.removesuffix("_rows"), m, n, device, seed)
    for part in ("dw_part", "db_part"):
        if part in outs:
            outs[part] = torch.full((p, n), float("nan"), device=device)
    return args, outs, want


def _rows_sums(outs: dict) -> dict:
    got = {"dx": outs["dx"]}
    for part in ("dw", "db"):
        if f"{part}_part" in outs:
            got[part] = outs[f"{part}_part"].sum(dim=0)
    return got


@pytest.mark.parametrize(
    ("m", "n", "p", "block_m", "block_n"),
    [(130, 333, 7, 1, 512), (5, 256, 9, 1, 256), (131, 333, 6, 2, 512), (5, 256, 4, 2, 256)],
)
@pytest.mark.parametrize("name", ROWS_BWD)
def test_the_one_read_backward_in_the_interpreter_agrees_with_autograd(
    name, m, n, p, block_m, block_n
):
    """Row blocks pid, pid + P, ... a program, the partial sums carried across them: a
    ragged row shorter than its block, more row blocks than programs (130 over 7) and
    more programs than rows (5 over 9: the programs without a row write zero partials);
    two rows a step (an odd last block)."""
    args, outs, want = _rows_backward(name, m, n, p, "cpu", 11)
    params = {"BLOCK_M": block_m, "BLOCK_N": block_n}
    kernel = kernel_op(EXAMPLES / f"{name}.mlir", params=params)
    interpret_launch(kernel, [*args, *outs.values()])
    _check(name, _rows_sums(outs), want)


@pytest.mark.parametrize("name", ROWS_BWD)
def test_the_tile_passes_keep_the_one_read_backwards_meaning(name):
    module = parse_file(EXAMPLES / f"{name}.mlir", params={"BLOCK_N": 512})
    base = baseline(module, {"M": 130, "N": 333, "P": 7})
    assert validate_pipeline(module, base, program=name)


@pytest.mark.parametrize("name", ROWS_BWD)
def test_the_one_read_backward_refuses_a_row_longer_than_its_block(name):
    from tawac.runtime.arguments import LaunchError, check_shapes

    res = compile_file(EXAMPLES / f"{name}.mlir", cubin=False)
    assert res.sidecar["checks"][0] == {"arg": "x", "dim": 1, "at_most": {"const": 4096}}
    shapes = {a["name"]: (8, 4097) if a.get("rank") == 2 else (8,) for a in res.sidecar["args"]}
    with pytest.raises(LaunchError, match=r"x.shape\[1\] \(N\) is 4097: the kernel handles"):
        check_shapes(res.sidecar["checks"], shapes, res.sidecar["args"])


@pytest.mark.parametrize("name", ROWS_BWD)
def test_the_one_read_backward_reads_each_row_once_and_assembles_without_spills(name):
    """One loop, x and dy streamed once (a TMA copy each a row), two rows a step on two
    consumer warp groups (the planner's choice for a two-row tile), each row's sums in its
    warp group; the partial sums' column sums after the loop take one scratch row per
    warp group (the warps side by side along a row hold other columns), not one per warp;
    no spills at 4096 columns."""
    res = compile_file(EXAMPLES / f"{name}.mlir", cubin=True)
    assert "0 bytes spill stores, 0 bytes spill loads" in res.ptxas_report, res.ptxas_report
    assert "wgmma" not in res.ptx
    explained = explain_module(parse_file(EXAMPLES / f"{name}.mlir"), PipelineOptions())
    assert [(a["name"], a["payload"]) for a in explained["arefs"][:2]] == [
        ("x", ["tensor<2x4096xbf16>"]),
        ("dy", ["tensor<2x4096xbf16>"]),
    ]
    roles = {r["role"]: r["warp_groups"] for r in explained["roles"]}
    assert roles == {"producer": 1, "consumer": 2}, roles
    assert {loop["loop"] for loop in explained["loops"]} == {0}  # the producer's and consumer's
    regions = explained["smem"]["regions"]
    scratch = [r["bytes"] for r in regions if "scratch" in r["what"]]
    assert scratch == [2 * 4096 * 4], regions  # was 8 warps x 4096 f32: 128 KiB


@pytest.mark.parametrize("block_m", [1, 2])
@pytest.mark.parametrize("name", ROWS_BWD)
def test_the_backward_at_8192_columns_reads_its_slots_again_instead_of_spilling(name, block_m):
    """At 8192 columns a row over a warp group is 64 f32 a thread per row-long value; held
    across the row reduction, x (or x hat), w dy and dy beside the partial sums spilled
    (the RMS norm 156 bytes, the layer norm 704 and 796). `plan` marks the three arefs
    `reread`; the consumer reads them again after the reduction, without waiting (`again`:
    the slot is held), so the ops after it are one straight run that ptxas schedules: no
    spill for the RMS norm, a few words for the layer norm (20 and 62 bytes with ptxas
    13.0), at one row a step and at two on two warp groups."""
    params = {"BLOCK_M": block_m, "BLOCK_N": 8192}
    path = EXAMPLES / f"{name}.mlir"
    split = {"consumer_warp_groups": block_m}  # the solver's model takes one at two rows
    explained = explain_module(parse_file(path, params=params), PipelineOptions(**split))
    assert [(a["name"], a.get("reread")) for a in explained["arefs"]] == [
        ("x", True),
        ("dy", True),
        ("w", True),
    ]
    spills, reads = [], []
    for reread in (True, False):
        res = compile_file(path, params=params, cubin=True, reread_slots=reread, **split)
        found = re.search(r"(\d+) bytes spill stores", res.ptxas_report)
        assert found is not None, res.ptxas_report
        spills.append(int(found.group(1)))
        reads.append(res.ptx.count("ld.shared.v4"))
        # the second reads wait for nothing: 3 gets' waits and 3 puts' in both builds
        assert res.ptx.count("mbarrier.try_wait.parity") == 6
    # each slot read again once, after the reductions (the layer norm's two, one after
    # the other, are one cut: w dy is held from the first to the second)
    assert reads[0] == 2 * reads[1], reads
    if name == "rmsnorm_bwd_rows":
        assert spills == [0, 156], spills
    else:
        assert spills[0] * 8 < spills[1], spills


@pytest.mark.parametrize("block_m", [1, 3])
@pytest.mark.parametrize("name", ROWS_BWD)
def test_the_one_read_backward_with_every_warp_side_by_side_has_no_column_scratch(name, block_m):
    """At one row a step, and at three (one consumer warp group; the blocked layout puts
    its four warps side by side and a 3-row tile's rows in each warp's lanes), each column
    lies in one warp: the column sums of the partials need no exchange through shared
    memory (3 rows reserved 16 KiB for one), only the row sums' few bytes."""
    params = {"BLOCK_M": block_m}
    res = compile_file(EXAMPLES / f"{name}.mlir", params=params, cubin=False)
    explained = explain_module(
        parse_file(EXAMPLES / f"{name}.mlir", params=params), PipelineOptions()
    )
    assert {r["role"]: r["warp_groups"] for r in explained["roles"]}["consumer"] == 1
    regions = explained["smem"]["regions"]
    rings = sum(r["bytes"] for r in regions if r["what"].startswith("ring of"))
    assert res.sidecar["dynamic_smem"] - rings < 1024, (res.sidecar["dynamic_smem"], regions)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(
    ("n", "block_m", "block_n"),
    [
        (100, 1, 128),
        (333, 1, 512),
        (4096, 1, 4096),
        (8192, 1, 8192),
        (100, 2, 128),
        (333, 2, 512),
        (4096, 2, 4096),
        (8192, 2, 8192),
        (333, 3, 512),  # every warp side by side, 3 rows in each warp's lanes
        (4096, 3, 4096),
    ],
)
@pytest.mark.parametrize("m", [1, 77, 3000])
@pytest.mark.parametrize("name", ROWS_BWD)
def test_the_one_read_backward_matches_autograd_on_the_gpu(name, m, n, block_m, block_n):
    """Outputs poisoned, P = the SM count (a program per SM, fewer where there are fewer
    row blocks), then the partials' column sums (`column_sum`, `column_sum_pair`), against
    autograd in float32."""
    _one_read_backward(name, m, n, block_m, block_n)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(("n", "block_n"), [(4000, 4096), (8192, 8192), (7777, 8192)])
@pytest.mark.parametrize("m", [1, 77, 3000])
@pytest.mark.parametrize("name", ROWS_BWD)
def test_the_one_read_backward_over_two_warp_groups_a_row_matches_autograd(name, m, n, block_n):
    """The one-read backward with one row a step spread over two consumer warp groups
    (`--consumer-warp-groups 2`: the eight warps side by side along the row)."""
    _one_read_backward(name, m, n, 1, block_n, consumer_warp_groups=2)


def _one_read_backward(name, m, n, block_m, block_n, **options):
    import torch

    import tawac.torch

    key = (name, block_m, block_n, *sorted(options.items()))
    if key not in _KERNELS:
        params = {"BLOCK_M": block_m, "BLOCK_N": block_n}
        _KERNELS[key] = tawac.torch.kernel(EXAMPLES / f"{name}.mlir", params=params, **options)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    args, outs, want = _rows_backward(name, m, n, min(-(-m // block_m), sms), "cuda", m * 5 + n)
    _KERNELS[key](*args, *outs.values())
    _sum_partials_and_check(name, outs, want, n)

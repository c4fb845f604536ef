"""Kernels without MMAs (a row softmax, an RMS norm): warp-specialize streams their 2-d
tiles through arefs (the producer's TMA loads, a ring in shared memory), the consumer
warp groups compute in registers and store; the planner gives the consumer as many warp
groups as split every 2-d tile into whole 64-row blocks. On the GPU, each runs against
the float32 interpreter and a torch reference at ragged row counts."""

from __future__ import annotations

from pathlib import Path

import pytest
from gpu_util import loaded_kernel, requires_gpu

from tawac.check import baseline, validate_pipeline
from tawac.compiler import compile_source, parse_file
from tawac.schedule.planner import ROWS_DEPTH, STREAM_BYTES
from tawac.support.options import PipelineOptions
from tawac.tools.explain import explain_module

DATA = Path(__file__).resolve().parent / "data" / "no_mma"
PROGRAMS = {
    "softmax_rows": {"M": 300, "N": 128},
    "rmsnorm_rows": {"M": 300, "N": 128, "eps": 1e-6},
    "softmax_online": {"M": 300, "N": 333},
    "softmin_shift": {"M": 300, "N": 128},
    "softmax_padded": {"M": 300, "N": 100},
}
#: The row lengths each program runs at on the GPU (the first two hold one 128-column
#: tile per row; the online softmax any length, ragged ones included).
COLUMNS = {
    "softmax_rows": [128],
    "rmsnorm_rows": [128],
    "softmax_online": [128, 333, 4096],
    "softmin_shift": [128],
    "softmax_padded": [1, 100, 128],
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_tile_passes_keep_its_meaning(name):
    module = parse_file(DATA / f"{name}.mlir")
    base = baseline(module, PROGRAMS[name])
    done = validate_pipeline(module, base, program=name)
    assert any(v.changed for v in done)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_it_compiles_to_a_producer_that_streams_and_a_consumer_without_mmas(name):
    res = compile_source((DATA / f"{name}.mlir").read_text(), f"{name}.mlir")
    assert "wgmma" not in res.ptx
    assert "cp.async.bulk.tensor.2d.shared::cluster.global" in res.ptx  # the producer's TMA
    assert "setmaxnreg.inc" in res.ptx  # the consumer's register budget
    if name == "softmin_shift":
        assert "min.f32" in res.ptx  # tile.reduce min


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_explain_shows_the_consumer_warp_groups_and_the_ring(name):
    """A kernel without a loop: two 64-row programs as one 128-row tile on two consumer
    warp groups, the tile read into their registers (and the RMS norm's weight, through
    an aref of its own), persistent, its producer as many 32 KiB slots ahead as keep
    `STREAM_BYTES` in flight. The online softmax (two loops over
    column blocks sharing one ring) is not widened: one 64-row program per CTA on one
    consumer warp group; its row block, which the second loop reads again, is resident,
    in a ring deeper than `ROWS_DEPTH` (`reuse-slots`: 13 slots of 16 KiB)."""
    module = parse_file(DATA / f"{name}.mlir")
    plan = explain_module(module, PipelineOptions())
    roles = {r["role"]: r["warp_groups"] for r in plan["roles"]}
    payloads = [(a["payload"], a["registers"]) for a in plan["arefs"]]
    if name == "softmax_online":
        assert "widen" not in plan
        assert roles == {"producer": 1, "consumer": 1}
        assert payloads == [(["tensor<64x128xbf16>"], [0])]
        assert plan["arefs"][0]["depth"] == 13 > ROWS_DEPTH
        assert plan["arefs"][0]["resident"]
        return
    assert plan["widen"] == {"programs": 2, "rows": 128}  # two 64-row programs as one tile
    assert roles == {"producer": 1, "consumer": 2}  # 128 rows: two m64 blocks
    assert payloads[0] == (["tensor<128x128xbf16>"], [0])  # read into the registers
    # a weight vector streams through a ring of its own, read into the tile's columns
    weights = [(["tensor<128xbf16>"], [0])] if name == "rmsnorm_rows" else []
    assert payloads[1:] == weights
    assert plan["arefs"][0]["depth"] == -(-STREAM_BYTES // 32768)


def test_a_kernel_of_1d_tiles_only_streams_its_loads():
    """Its producer copies its 1-d loads into shared memory by TMA, the consumer reads
    them from there (tests/test_vectors_1d.py)."""
    text = """tile.kernel @add(%x: !tile.tensor<?xf32, ["N"]>, %y: !tile.tensor<?xf32, ["N"]>) {
  %c = arith.constant 128 : index
  %pid = tile.program_id x
  %o = arith.muli %pid, %c : index
  %t = tile.load %x[%o] : !tile.tensor<?xf32, ["N"]> -> tensor<128xf32>
  tile.store %t, %y[%o] : tensor<128xf32> -> !tile.tensor<?xf32, ["N"]>
  tile.return
}
"""
    res = compile_source(text, "add.mlir")
    assert "cp.async.bulk.tensor.1d" in res.ptx and "ld.global" not in res.ptx


# ---- on the GPU


def _torch_reference(name, x, w=None, eps=0.0):
    import torch

    xf = x.float()
    if name.startswith(("softmax", "softmin")):
        return torch.softmax(xf, dim=1)  # a shift by the row minimum gives the same values
    return xf * torch.rsqrt((xf * xf).mean(dim=1, keepdim=True) + eps) * w.float()


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("m", [1, 77, 1000, 4096])
@pytest.mark.parametrize(
    ("name", "n"), [(name, n) for name in sorted(PROGRAMS) for n in COLUMNS[name]]
)
def test_it_matches_torch_on_the_gpu(name, n, m):
    import torch

    kernel = loaded_kernel(DATA / f"{name}.mlir")
    g = torch.Generator(device="cuda").manual_seed(m + n)
    x = (torch.randn(m, n, device="cuda", generator=g) * 3).to(torch.bfloat16)
    y = torch.full_like(x, float("nan"))
    if name.startswith(("softmax", "softmin")):
        kernel(x, y)
        want = _torch_reference(name, x)
    else:
        w = torch.randn(n, device="cuda", generator=g).to(torch.bfloat16)
        kernel(x, w, y, 1e-6)
        want = _torch_reference(name, x, w, 1e-6)
    torch.cuda.synchronize()
    assert not torch.isnan(y).any()
    err = (y.float() - want).norm() / want.norm()
    assert err < 1e-2, (name, m, n, float(err))


def test_an_f64_tile_is_a_located_refusal():
    """Nothing lowers f64 tiles: the vector add in f64 is refused at its first load (a fuzz
    finding: an internal error in the 1-d load's lowering before)."""
    from tawac.support.diagnostics import CompileError

    text = (DATA / "vector_add.mlir").read_text().replace("f32", "f64")
    with pytest.raises(CompileError) as e:
        compile_source(text, "va64.mlir", cubin=False)
    assert str(e.value).startswith("va64.mlir:8:9: error: convert-to-ptx: tile.load makes a ")
    assert "f64 tiles are not supported" in str(e.value)

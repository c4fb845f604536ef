"""Kernels whose tiles are all 1-d (Triton's vector add, a row's softmax with the row one
1-d tile, a 1-d kernel with two outputs, short rows): their vectors take a `BlockedLayout`
over the consumer's threads (runs of 16 bytes of the widest element their loads and
stores move); the producer streams their loads through arefs (TMA boxes of up to 256
elements into a ring, the consumer reading its runs with `ld.shared.v4`, a padding other
than zero selected past the tensor's bound), the consumer stores 16-byte vectors, and a
reduction to a scalar goes through the warp's lanes and the partition's warps (shared
memory between two `bar.sync`s of the consumer partition). A load TMA cannot copy in
whole boxes stays the consumer's own (8-byte vectors predicated by the tensor's bound).
On the GPU, each runs against torch at ragged sizes."""

from __future__ import annotations

from pathlib import Path

import pytest
from gpu_util import assert_assembles_without_spills, loaded_kernel, requires_gpu

from tawac.check import baseline, validate_pipeline
from tawac.compiler import compile_source, parse_file
from tawac.schedule.planner import STREAM_BYTES, STREAM_DEPTH
from tawac.support.diagnostics import CompileError
from tawac.support.options import PipelineOptions
from tawac.target.layouts import BlockedLayout
from tawac.tools.explain import explain_module

DATA = Path(__file__).resolve().parent / "data" / "no_mma"
PROGRAMS = {
    "vector_add": {"N": 2500},
    "softmax_row_1d": {"M": 37, "N": 1000},
    "sum_product": {"N": 3001},
    "short_rows": {"M": 37, "N": 50},
}


def _compile(name: str):
    return compile_source((DATA / f"{name}.mlir").read_text(), f"{name}.mlir")


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_tile_passes_keep_its_meaning(name):
    module = parse_file(DATA / f"{name}.mlir")
    validate_pipeline(module, baseline(module, PROGRAMS[name]), program=name)


STREAMED = {
    "vector_add": [("x", "tensor<1024xf32>", 4096), ("y", "tensor<1024xf32>", 4096)],
    "softmax_row_1d": [("x", "tensor<1024xbf16>", 2048)],
    "sum_product": [("x", "tensor<1024xf32>", 4096), ("y", "tensor<1024xf32>", 4096)],
    "short_rows": [("x", "tensor<64xf32>", 256)],
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_explain_shows_the_producer_streaming_each_load(name):
    """Each 1-d load is an aref of its own; the kernel (no loop, no MMA) is persistent and
    its producer runs ahead of the consumer by as many slots as keep `STREAM_BYTES` in
    flight, up to `STREAM_DEPTH`; the consumer is 1 warp group."""
    plan = explain_module(parse_file(DATA / f"{name}.mlir"), PipelineOptions())
    roles = {r["role"]: r["warp_groups"] for r in plan["roles"]}
    assert roles == {"producer": 1, "consumer": 1}
    got = [(a["name"], *a["payload"], a["slot_bytes"]) for a in plan["arefs"]]
    assert got == STREAMED[name]
    assert all(
        a["depth"] == min(STREAM_DEPTH, -(-STREAM_BYTES // a["slot_bytes"])) for a in plan["arefs"]
    )


def test_the_vector_add_moves_what_its_layout_says():
    """1024 f32 over 128 threads: runs of 4, two a thread. The producer copies x and y as
    one bulk copy each where the tile lies inside the tensor, else in four 256-element
    boxes each (1-d tensor maps, no swizzle); the consumer waits on each
    slot and reads each run with one `ld.shared.v4.f32`; each run of z is one 16-byte
    store under the bound."""
    res = _compile("vector_add")
    lay = BlockedLayout.for_tile(1024, 128, 4)
    assert (lay.vec, lay.reps) == (4, 2)
    ptx = res.ptx
    assert ptx.count("cp.async.bulk.tensor.1d.shared::cluster.global.tile") == 2 * 4
    assert ptx.count("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r") == 2
    assert ptx.count(", 4096;") >= 2  # each slot expects the whole tile's bytes
    assert ptx.count("ld.shared.v4.f32") == 2 * lay.num_regs // 4
    assert "ld.global" not in ptx
    consumer = ptx[ptx.index("ld.shared.v4.f32") - 2000 : ptx.index("ld.shared.v4.f32")]
    assert "mbarrier.try_wait.parity" in consumer  # the consumer waits for the slot
    assert ptx.count("st.global.v4.b32") == lay.num_regs // 4
    stores = [line for line in ptx.splitlines() if "st.global" in line]
    assert stores and all(line.strip().startswith("@%p") for line in stores)
    assert "wgmma" not in ptx and "shfl" not in ptx
    assert res.sidecar["block"] == [256, 1, 1]
    assert res.sidecar["grid"][0] == {"persistent": 1}
    assert res.sidecar["program_grid"][0] == {"cdiv": {"arg": "z", "dim": 0}, "by": 1024}
    maps = [p for p in res.sidecar["params"] if p["kind"] == "tensor_map"]
    assert [(p["arg"], p["box"], p["swizzle"]) for p in maps] == [
        ("x", [256], "none"),
        ("y", [256], "none"),
    ]
    # a tile inside x or y is one bulk copy from its address (no `align`: its tensor map
    # needs the same of it), the boxes for a tile past the end
    assert ptx.count("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes") == 2
    assert [
        (p["arg"], p.get("align")) for p in res.sidecar["params"] if p["kind"] == "pointer"
    ] == [("x", None), ("y", None), ("z", 16)]
    # two rings of STREAM_DEPTH slots, their full and empty mbarriers
    assert res.sidecar["dynamic_smem"] == 2 * STREAM_DEPTH * (4096 + 2 * 8)


def test_the_row_softmax_reduces_to_scalars_across_the_partition():
    """1024 bf16 over 128 threads: one run of 8 a thread. The row is four 256-element
    boxes of a row of the 2-d tensor (box 256 x 1), read as one `ld.shared.v4.b32` of
    packed pairs; -inf is selected past N after the widening to f32 (8 selp.f32); two
    reductions to a scalar (5 shuffles each, then the 4 warps through 16 bytes of shared
    memory between two barriers of the 128 consumer threads), one 16-byte store of packed
    pairs."""
    res = _compile("softmax_row_1d")
    lay = BlockedLayout.for_tile(1024, 128, 2)
    assert (lay.vec, lay.reps, lay.warps) == (8, 1, 4)
    ptx = res.ptx
    assert ptx.count("cp.async.bulk.tensor.2d") == 4 and "ld.global" not in ptx
    assert ptx.count("ld.shared.v4.b32") == 1
    assert ptx.count("selp.f32") == 8 and "selp.b16" not in ptx
    assert ptx.count("0fFF800000") == 1  # f32 -inf, the padding
    for mask in (16, 8, 4, 2, 1):
        assert ptx.count(f", {mask}, 0x1f, 0xffffffff;") == 2
    assert ptx.count("bar.sync 15, 128;") == 4
    assert ptx.count("st.shared.f32") == 2 and ptx.count("ld.shared.f32") == 8
    assert ptx.count("st.global.v4.b32") == 1
    # the ring's slot, its two mbarriers, then the per-warp partials
    # the ring, its mbarriers and the reduction's scratch (one f32 per warp)
    assert res.sidecar["dynamic_smem"] == STREAM_DEPTH * (2048 + 2 * 8) + 16
    maps = [p for p in res.sidecar["params"] if p["kind"] == "tensor_map"]
    assert [(p["arg"], p["box"], p["swizzle"]) for p in maps] == [("x", [256, 1], "none")]
    assert res.sidecar["program_grid"][0] == {"cdiv": {"arg": "y", "dim": 0}, "by": 1}


def test_a_bf16_store_in_f32_runs_writes_packed_pairs():
    """The f32 loads set runs of 4: the f32 output leaves as 16-byte stores, the bf16 one
    as 4-byte packed pairs."""
    ptx = _compile("sum_product").ptx
    assert ptx.count("ld.shared.v4.f32") == 4 and "ld.global" not in ptx
    assert ptx.count("st.global.v4.b32") == 2
    assert ptx.count("st.global.b32") == 4
    assert ptx.count("cvt.rn.bf16.f32") == 8


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_it_assembles_without_spills(name):
    assert_assembles_without_spills(_compile(name).ptx)


def _add(n: int) -> str:
    return f"""tile.kernel @add(%x: !tile.tensor<?xf32, ["N"]>, %y: !tile.tensor<?xf32, ["N"]>) {{
  %c = arith.constant {n} : index
  %pid = tile.program_id x
  %o = arith.muli %pid, %c : index
  %t = tile.load %x[%o] : !tile.tensor<?xf32, ["N"]> -> tensor<{n}xf32>
  tile.store %t, %y[%o] : tensor<{n}xf32> -> !tile.tensor<?xf32, ["N"]>
  tile.return
}}
"""


def test_a_vector_tma_cannot_copy_in_whole_boxes_is_the_consumers_own():
    """300 f32 are one box of 256 and a rest: the producer does not stream them; the
    consumer's first 75 threads read their runs from global memory themselves."""
    ptx = compile_source(_add(300), "add.mlir").ptx
    assert "cp.async.bulk" not in ptx and "mbarrier.try_wait" not in ptx
    assert ptx.count("ld.global.cg.v2.f32") == 2


def test_a_vector_the_threads_cannot_split_is_refused_where_it_is():
    """600 f32 are more than one run of 4 a thread and not whole runs of 1 over 128."""
    with pytest.raises(CompileError, match=r"^add\.mlir:5:\d+: error: convert-to-ptx: a 600-"):
        compile_source(_add(600), "add.mlir")


def test_a_short_vector_belongs_to_the_first_threads():
    """100 f32: runs of 4 for the first 25 threads. One 100-element box (400 bytes); the
    other threads read the last run of the slot (one min.s32) and store nothing (the
    store's bound is the least of the tensor's size and the tile's end)."""
    ptx = compile_source(_add(100), "add.mlir").ptx
    assert ptx.count("min.s32") == 2  # the slot's last run, the store's bound
    assert ptx.count("cp.async.bulk.tensor.1d") == 1
    assert ptx.count("ld.shared.v4.f32") == 1 and ptx.count("st.global.v4.b32") == 1


def test_short_rows_reduce_over_the_owning_threads_only():
    """64 f32 over 128 threads: 16 own a run of 4. Both reductions select their identity
    (-inf, 0) in the threads that own nothing; the one-element stores are bounded by
    origin + 1 (only the first thread writes)."""
    lay = BlockedLayout.for_tile(64, 128, 4)
    assert (lay.vec, lay.owners, lay.num_regs) == (4, 16, 4)
    ptx = _compile("short_rows").ptx
    # each register to the identity of each reduction (zero padding: TMA's own)
    assert ptx.count("selp.f32") == 2 * lay.num_regs
    assert ptx.count("0fFF800000") >= 1  # -inf, max's identity
    assert ptx.count("min.s32") == 4  # the slot's last run; y, sums, maxes
    assert ptx.count("cp.async.bulk.tensor.2d") == 1 and ptx.count("ld.shared.v4.f32") == 1
    assert ptx.count("st.global.f32") == 2 and ptx.count("st.global.v4.b32") == 1


# ---- on the GPU


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("n", [1, 1000, 1024, 4097, 100_003])
def test_vector_add_matches_torch_on_the_gpu(n):
    import torch

    kernel = loaded_kernel(DATA / "vector_add.mlir")
    g = torch.Generator(device="cuda").manual_seed(n)
    x = torch.randn(n, device="cuda", generator=g)
    y = torch.randn(n, device="cuda", generator=g)
    z = torch.full_like(x, float("nan"))
    kernel(x, y, z)
    torch.cuda.synchronize()
    torch.testing.assert_close(z, x + y)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("n", [1000, 3001])
def test_two_outputs_match_torch_on_the_gpu(n):
    import torch

    kernel = loaded_kernel(DATA / "sum_product.mlir")
    g = torch.Generator(device="cuda").manual_seed(n)
    x = torch.randn(n, device="cuda", generator=g)
    y = torch.randn(n, device="cuda", generator=g)
    s = torch.full_like(x, float("nan"))
    p = torch.full((n,), float("nan"), device="cuda", dtype=torch.bfloat16)
    kernel(x, y, s, p)
    torch.cuda.synchronize()
    torch.testing.assert_close(s, x + y)
    torch.testing.assert_close(p, (x * y).to(torch.bfloat16))


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(("m", "n"), [(1, 1), (37, 50), (300, 64), (5, 3)])
def test_short_rows_match_torch_on_the_gpu(m, n):
    import torch

    kernel = loaded_kernel(DATA / "short_rows.mlir")
    g = torch.Generator(device="cuda").manual_seed(m * 100 + n)
    x = torch.randn(m, n, device="cuda", generator=g) - 5  # x + 1 < 1: an owner-less 1 would win
    y = torch.full_like(x, float("nan"))
    sums = torch.full((m,), float("nan"), device="cuda")
    maxes = torch.full((m,), float("nan"), device="cuda")
    kernel(x, y, sums, maxes)
    torch.cuda.synchronize()
    x1 = torch.nn.functional.pad(x, (0, 64 - n)) + 1  # the load pads with 0
    want_max = x1.max(dim=1).values
    torch.testing.assert_close(maxes, want_max)
    torch.testing.assert_close(sums, x1.sum(dim=1))
    torch.testing.assert_close(y, x1[:, :n] - want_max[:, None])


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("m", [1, 77, 1000])
@pytest.mark.parametrize("n", [1, 100, 781, 1024])
def test_softmax_row_matches_torch_on_the_gpu(m, n):
    import torch

    kernel = loaded_kernel(DATA / "softmax_row_1d.mlir")
    g = torch.Generator(device="cuda").manual_seed(m + n)
    x = (torch.randn(m, n, device="cuda", generator=g) * 3).to(torch.bfloat16)
    y = torch.full_like(x, float("nan"))
    kernel(x, y)
    torch.cuda.synchronize()
    want = torch.softmax(x.float(), dim=1)
    assert not torch.isnan(y).any()
    err = (y.float() - want).norm() / want.norm()
    assert err < 1e-2, (m, n, float(err))

"""Kernels whose tiles are all 1-d (Triton's vector add, a row's softmax with the row one
1-d tile, a 1-d kernel with two outputs): their vectors take a `BlockedLayout` over the
consumer's threads (runs of 16 bytes of the widest element their loads and stores move),
the consumer reads its loads from global memory itself (8-byte vectors predicated by the
tensor's bound, the padding outside) and stores 16-byte vectors, and a reduction to a
scalar goes through the warp's lanes and the partition's warps (shared memory between
two `bar.sync`s of the consumer partition). On the GPU, each runs against torch at
ragged sizes."""

from __future__ import annotations

from pathlib import Path

import pytest
from gpu_util import requires_gpu

from tawac.check import baseline, validate_pipeline
from tawac.compiler import compile_source, parse_file
from tawac.support.diagnostics import CompileError
from tawac.support.options import PipelineOptions
from tawac.support.ptxas import assemble, locate_ptxas
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


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_explain_shows_one_consumer_warp_group_and_no_ring(name):
    """Nothing streams: the consumer reads its 1-d loads itself, on 1 warp group."""
    plan = explain_module(parse_file(DATA / f"{name}.mlir"), PipelineOptions())
    roles = {r["role"]: r["warp_groups"] for r in plan["roles"]}
    assert roles == {"producer": 1, "consumer": 1}
    assert plan["arefs"] == []


def test_the_vector_add_moves_what_its_layout_says():
    """1024 f32 over 128 threads: runs of 4, two a thread; each run of x and y is two
    8-byte loads, each run of z one 16-byte store, every access under the bound."""
    res = _compile("vector_add")
    lay = BlockedLayout.for_tile(1024, 128, 4)
    assert (lay.vec, lay.reps) == (4, 2)
    assert res.ptx.count("ld.global.cg.v2.f32") == 2 * lay.num_regs // 2
    assert res.ptx.count("st.global.v4.b32") == lay.num_regs // 4
    stores = [line for line in res.ptx.splitlines() if "st.global" in line]
    assert stores and all(line.strip().startswith("@%p") for line in stores)
    assert "wgmma" not in res.ptx and "cp.async.bulk" not in res.ptx and "shfl" not in res.ptx
    assert res.sidecar["block"] == [256, 1, 1]
    assert res.sidecar["grid"][0] == {"cdiv": {"arg": "z", "dim": 0}, "by": 1024}
    assert all(p.get("align") == 16 for p in res.sidecar["params"] if p["kind"] == "pointer")


def test_the_row_softmax_reduces_to_scalars_across_the_partition():
    """1024 bf16 over 128 threads: one run of 8 a thread (two 8-byte loads of packed
    pairs, -inf selected past N), two reductions to a scalar (5 shuffles each, then the 4
    warps through 16 bytes of shared memory between two barriers of the 128 consumer
    threads), one 16-byte store of packed pairs."""
    res = _compile("softmax_row_1d")
    lay = BlockedLayout.for_tile(1024, 128, 2)
    assert (lay.vec, lay.reps, lay.warps) == (8, 1, 4)
    ptx = res.ptx
    assert ptx.count("ld.global.cg.v2.f32") == 2
    assert ptx.count("selp.b16") == 8
    assert ptx.count("mov.b16 %h0, 65408;") == 1  # bf16 -inf, the padding
    for mask in (16, 8, 4, 2, 1):
        assert ptx.count(f", {mask}, 0x1f, 0xffffffff;") == 2
    assert ptx.count("bar.sync 15, 128;") == 4
    assert ptx.count("st.shared.f32") == 2 and ptx.count("ld.shared.f32") == 8
    assert ptx.count("st.global.v4.b32") == 1
    assert res.sidecar["dynamic_smem"] == 16  # the per-warp partials
    assert res.sidecar["grid"][0] == {"cdiv": {"arg": "y", "dim": 0}, "by": 1}


def test_a_bf16_store_in_f32_runs_writes_packed_pairs():
    """The f32 loads set runs of 4: the f32 output leaves as 16-byte stores, the bf16 one
    as 4-byte packed pairs."""
    ptx = _compile("sum_product").ptx
    assert ptx.count("ld.global.cg.v2.f32") == 8
    assert ptx.count("st.global.v4.b32") == 2
    assert ptx.count("st.global.b32") == 4
    assert ptx.count("cvt.rn.bf16.f32") == 8


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_it_assembles_without_spills(name):
    ptxas = locate_ptxas()
    if ptxas is None:
        pytest.skip("no ptxas")
    _, report = assemble(_compile(name).ptx, ptxas, verbose=True)
    assert "0 bytes spill stores, 0 bytes spill loads" in report, report


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


def test_a_vector_the_threads_cannot_split_is_refused_where_it_is():
    """600 f32 are more than one run of 4 a thread and not whole runs of 1 over 128."""
    with pytest.raises(CompileError, match=r"^add\.mlir:5:\d+: error: convert-to-ptx: a 600-"):
        compile_source(_add(600), "add.mlir")


def test_a_short_vector_belongs_to_the_first_threads():
    """100 f32: runs of 4 for the first 25 threads; every access is bounded by the least
    of the tensor's size and the tile's end, so the other threads move nothing."""
    ptx = compile_source(_add(100), "add.mlir").ptx
    assert ptx.count("min.s32") == 2  # the load's bound and the store's
    assert ptx.count("ld.global.cg.v2.f32") == 2 and ptx.count("st.global.v4.b32") == 1


def test_short_rows_reduce_over_the_owning_threads_only():
    """64 f32 over 128 threads: 16 own a run of 4. Both reductions select their identity
    (-inf, 0) in the threads that own nothing; the one-element stores are bounded by
    origin + 1 (only the first thread writes)."""
    lay = BlockedLayout.for_tile(64, 128, 4)
    assert (lay.vec, lay.owners, lay.num_regs) == (4, 16, 4)
    ptx = _compile("short_rows").ptx
    # the second f32 of each of the two 8-byte loads selected to the padding past N, then
    # each register to the identity of each reduction
    assert ptx.count("selp.f32") == 2 + 2 * lay.num_regs
    assert ptx.count("0fFF800000") >= 1  # -inf, max's identity
    assert ptx.count("min.s32") == 4  # x, y, sums, maxes
    assert ptx.count("st.global.f32") == 2 and ptx.count("st.global.v4.b32") == 1


# ---- on the GPU


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("n", [1, 1000, 1024, 4097, 100_003])
def test_vector_add_matches_torch_on_the_gpu(n):
    import torch

    from tawac.compiler import compile_file
    from tawac.runtime import load_kernel

    res = compile_file(DATA / "vector_add.mlir", cubin=True)
    kernel = load_kernel(res.cubin, res.sidecar)
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

    from tawac.compiler import compile_file
    from tawac.runtime import load_kernel

    res = compile_file(DATA / "sum_product.mlir", cubin=True)
    kernel = load_kernel(res.cubin, res.sidecar)
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

    from tawac.compiler import compile_file
    from tawac.runtime import load_kernel

    res = compile_file(DATA / "short_rows.mlir", cubin=True)
    kernel = load_kernel(res.cubin, res.sidecar)
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

    from tawac.compiler import compile_file
    from tawac.runtime import load_kernel

    res = compile_file(DATA / "softmax_row_1d.mlir", cubin=True)
    kernel = load_kernel(res.cubin, res.sidecar)
    g = torch.Generator(device="cuda").manual_seed(m + n)
    x = (torch.randn(m, n, device="cuda", generator=g) * 3).to(torch.bfloat16)
    y = torch.full_like(x, float("nan"))
    kernel(x, y)
    torch.cuda.synchronize()
    want = torch.softmax(x.float(), dim=1)
    assert not torch.isnan(y).any()
    err = (y.float() - want).norm() / want.norm()
    assert err < 1e-2, (m, n, float(err))

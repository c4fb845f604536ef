"""Triton GEMMs written as users write them, not as the tutorials do
(`tests/data/triton/unseen_gemms.py`): converted from their `.ttir`, checked
against torch on the CPU interpreter at ragged sizes, assembled without spills, and run
through `tawac.triton` on the GPU with Triton's arguments (pointers, sizes, strides)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from gpu_util import requires_gpu

torch = pytest.importorskip("torch")

from xdsl.dialects.builtin import f32  # noqa: E402

from tawac.analysis.grid import infer_grid  # noqa: E402
from tawac.compiler import compile_module, parse_file  # noqa: E402
from tawac.dialects import tile  # noqa: E402
from tawac.runtime.interpret import interpret  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "triton"
SILU = DATA / "unseen_gemms.ttir"  # bias[None, :].to(tl.float32), SiLU, `+=` accumulation
BMM = DATA / "unseen_bmm.ttir"  # batch on grid axis z, 3-d strides
SCALED = DATA / "unseen_f32_scaled.ttir"  # row-major program order, f32 out, runtime scale
SIZES = [(200, 300, 130), (1, 17, 70), (129, 128, 64)]


def _kernel(path: Path) -> tile.KernelOp:
    return next(o for o in parse_file(path).walk() if isinstance(o, tile.KernelOp))


def _grid(kern: tile.KernelOp, shapes: dict[str, tuple[int, ...]]) -> tuple[int, int, int]:
    """The logical grid the conversion inferred, at these tensor shapes."""
    out = []
    for g in infer_grid(kern):
        if "const" in g:
            out.append(g["const"])
            continue
        ref = g["cdiv"]
        out.append(math.ceil(shapes[ref["arg"]][ref["dim"]] / g["by"]))
    return tuple(out)  # type: ignore[return-value]


def _err(got, ref) -> float:
    return ((got.float() - ref).abs().max() / ref.abs().max()).item()


@pytest.mark.parametrize(("m", "n", "k"), SIZES)
def test_bias_after_the_expand_and_silu(m, n, k):
    """`bias[None, :].to(tl.float32)`: the conversion applies to the bias vector, which
    the broadcast then reads (it used to be refused: extf of a tt.expand_dims)."""
    kern = _kernel(SILU)
    g = torch.Generator().manual_seed(m + n + k)
    a, b = torch.randn(m, k, generator=g).half(), torch.randn(k, n, generator=g).half()
    bias = torch.randn(n, generator=g).half()
    c = torch.full((m, n), float("nan")).half()
    interpret(kern, [a, b, bias, c], _grid(kern, {"c": (m, n)}))
    ref = a.float() @ b.float() + bias.float()
    ref = ref * torch.sigmoid(ref)
    assert not torch.isnan(c).any() and _err(c, ref) < 2e-3


@pytest.mark.parametrize(("m", "n", "k"), SIZES)
def test_batched_matmul_on_axis_z(m, n, k):
    kern = _kernel(BMM)
    assert _grid(kern, {"c": (3, m, n)})[2] == 3
    g = torch.Generator().manual_seed(m * n + k)
    a, b = (
        torch.randn(3, m, k, generator=g).bfloat16(),
        torch.randn(3, k, n, generator=g).bfloat16(),
    )
    c = torch.full((3, m, n), float("nan")).bfloat16()
    interpret(kern, [a, b, c], _grid(kern, {"c": (3, m, n)}))
    assert not torch.isnan(c.float()).any() and _err(c, a.float() @ b.float()) < 1e-2


@pytest.mark.parametrize(("m", "n", "k"), SIZES)
def test_row_major_program_order_f32_out_and_a_scale(m, n, k):
    """`pid // num_n, pid % num_n`: program id x runs along N (the conversion's 2-d grid
    keeps Triton's order of the linear id); B is read through its strides as K x N."""
    kern = _kernel(SCALED)
    grid = _grid(kern, {"c": (m, n)})
    assert grid[:2] == (math.ceil(n / 128), math.ceil(m / 128))
    g = torch.Generator().manual_seed(m - n + k)
    a, bt = torch.randn(m, k, generator=g).bfloat16(), torch.randn(n, k, generator=g).bfloat16()
    c = torch.full((m, n), float("nan"))
    interpret(kern, [a, bt.T, c, 0.5], grid)
    assert not torch.isnan(c).any() and _err(c, 0.5 * (a.float() @ bt.float().T)) < 1e-5


@pytest.mark.parametrize("path", [SILU, BMM, SCALED], ids=lambda p: p.stem)
def test_they_assemble_without_spills(path):
    res = compile_module(parse_file(path), cubin=True)
    assert re.search(r"\b0 bytes spill stores", res.ptxas_report)
    assert "wgmma.mma_async" in res.ptx


def _source(name: str = "unseen_gemms"):
    """The Python module tests/data/triton/<name>.py (needs Triton to import)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, DATA / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_unit_stride_specialized_b_is_read_transposed():
    """Through `tawac.triton.compile` a stride argument equal to 1 is a constant, as in
    Triton's JIT: B passed as the transpose of an N x K tensor (`stride_bk` = 1) becomes
    an N x K tile tensor that the dot reads transposed."""
    pytest.importorskip("triton")
    from tawac.compiler import parse_text
    from tawac.triton import ttir_of

    cfg = _source().TTIR_VARIANTS["unseen_f32_scaled"]
    ones = {"stride_ak": 1, "stride_bk": 1, "stride_cn": 1}
    text = ttir_of(cfg["kernel"], cfg["signature"], {**cfg["constexprs"], **ones})
    kern = next(o for o in parse_text(text, "s.ttir").walk() if isinstance(o, tile.KernelOp))
    assert str(kern.body.block.args[1].type) == '!tile.tensor<?x?xbf16, ["bn", "K"]>'
    (dot,) = [o for o in kern.walk() if isinstance(o, tile.DotOp)]
    assert dot.transpose_rhs is not None
    m, n, k = 200, 300, 130
    g = torch.Generator().manual_seed(7)
    a, bt = torch.randn(m, k, generator=g).bfloat16(), torch.randn(n, k, generator=g).bfloat16()
    c = torch.full((m, n), float("nan"))
    interpret(kern, [a, bt, c, 0.5], _grid(kern, {"c": (m, n)}))
    assert _err(c, 0.5 * (a.float() @ bt.float().T)) < 1e-5


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(("m", "n", "k"), [(1000, 3000, 520), (256, 384, 4096)])
def test_silu_bias_and_bmm_run_with_tritons_arguments(m, n, k):
    from tawac.triton import from_ttir

    dev = "cuda"
    g = torch.Generator(device=dev).manual_seed(m + k)
    a = torch.randn(m, k, generator=g, device=dev).half()
    b = torch.randn(k, n, generator=g, device=dev).half()
    bias = torch.randn(n, generator=g, device=dev).half()
    c = torch.full((m, n), float("nan"), device=dev).half()
    kern = from_ttir(SILU.read_text(), str(SILU))
    kern(a, b, bias, c, m, n, k, *a.stride(), *b.stride(), *c.stride())
    torch.cuda.synchronize()
    ref = a.float() @ b.float() + bias.float()
    assert _err(c, ref * torch.sigmoid(ref)) < 2e-3

    a3 = torch.randn(2, m, k, generator=g, device=dev).bfloat16()
    b3 = torch.randn(2, k, n, generator=g, device=dev).bfloat16()
    c3 = torch.full((2, m, n), float("nan"), device=dev).bfloat16()
    kern = from_ttir(BMM.read_text(), str(BMM))
    kern(a3, b3, c3, m, n, k, *a3.stride(), *b3.stride(), *c3.stride())
    torch.cuda.synchronize()
    assert _err(c3, a3.float() @ b3.float()) < 1e-2


@pytest.mark.gpu
@requires_gpu
def test_b_through_its_strides_from_python_and_the_generic_ttir_refusing_it():
    """From Python (`tawac.triton.compile`), B = the transpose of an N x K tensor runs;
    the unspecialized `.ttir` reads B's last dimension as the contiguous one and refuses
    that call with one LaunchError naming the argument."""
    pytest.importorskip("triton")
    import tawac.triton
    from tawac.runtime.arguments import LaunchError

    cfg = _source().TTIR_VARIANTS["unseen_f32_scaled"]
    m, n, k = 1000, 3000, 520
    dev = "cuda"
    a = torch.randn(m, k, device=dev).bfloat16()
    bt = torch.randn(n, k, device=dev).bfloat16()
    b = bt.T
    c = torch.full((m, n), float("nan"), device=dev)
    fn = tawac.triton.compile(
        cfg["kernel"], signature=cfg["signature"], constexprs=cfg["constexprs"]
    )
    args = (a, b, c, m, n, k, 0.5, *a.stride(), b.stride(1), b.stride(0), *c.stride())
    fn[(1,)](*args)
    torch.cuda.synchronize()
    assert _err(c, 0.5 * (a.float() @ bt.float().T)) < 1e-5
    generic = tawac.triton.from_ttir(SCALED.read_text(), str(SCALED))
    with pytest.raises(LaunchError, match="argument b_ptr: its dimension"):
        generic(*args)


ATTN = DATA / "unseen_attention.ttir"
ATTN_CAUSAL = DATA / "unseen_attention_causal.ttir"


def _attention_ref(q, k, v, causal: bool):
    s = q.float() @ k.float().transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        n = s.shape[-1]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1).to(s.device), float("-inf"))
    return torch.softmax(s, -1) @ v.float()


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("seqlen", [200, 128, 1])
def test_an_attention_written_otherwise_computes_attention(causal, seqlen):
    """The head count a constexpr (`off_bh % H`: 4 heads per batch entry on grid axis
    y), every key block masked against `seqlen` with `tl.where` (a scalar side:
    `tile.splat`), the causal mask joined with `&` (two selects), and the causal loop's
    end a `tl.minimum` (rebuilt as `arith.minsi`)."""
    kern = _kernel(ATTN_CAUSAL if causal else ATTN)
    b, h, d = 2, 4, 128
    grid = _grid(kern, {"Out": (b, h, seqlen, d)})
    assert grid == (math.ceil(seqlen / 128), h, b)
    g = torch.Generator().manual_seed(seqlen + causal)
    q, k, v = (torch.randn(b, h, seqlen, d, generator=g).bfloat16() for _ in range(3))
    o = torch.full((b, h, seqlen, d), float("nan")).bfloat16()
    interpret(kern, [q, k, v, o, 1 / math.sqrt(d)], grid)
    ref = _attention_ref(q, k, v, causal)
    assert not torch.isnan(o.float()).any()
    assert (o.float() - ref).abs().max().item() < 2e-2


@pytest.mark.parametrize("path", [ATTN, ATTN_CAUSAL], ids=lambda p: p.stem)
def test_the_attentions_assemble_without_spills(path):
    res = compile_module(parse_file(path), cubin=True)
    assert re.search(r"\b0 bytes spill stores", res.ptxas_report)
    assert res.ptx.count("wgmma.mma_async") >= 2


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("causal", [False, True])
def test_the_attention_from_python_on_the_gpu(causal):
    pytest.importorskip("triton")

    import tawac.triton

    src = _source("unseen_attention")
    consts = {"H": 4, "BLOCK_M": 128, "BLOCK_N": 128, "D": 128, "CAUSAL": causal}
    fn = tawac.triton.compile(src.flash_fwd, signature=src.SIGNATURE, constexprs=consts)
    b, h, s, d = 2, 4, 1000, 128
    q, k, v = (torch.randn(b, h, s, d, device="cuda").bfloat16() for _ in range(3))
    o = torch.full_like(q, float("nan"))
    fn[(math.ceil(s / 128), b * h)](
        q, k, v, o, 1 / math.sqrt(d), s, *q.stride(), *k.stride(), *v.stride(), *o.stride()
    )
    torch.cuda.synchronize()
    assert (o.float() - _attention_ref(q, k, v, causal)).abs().max().item() < 2e-2


GELU = DATA / "unseen_block_ptr_gelu.ttir"
SWIZZLE = DATA / "unseen_swizzle_residual.ttir"
SOFTMAX = DATA / "unseen_softmax.ttir"


@pytest.mark.parametrize(("m", "n", "k"), SIZES)
def test_block_pointers_and_exact_gelu(m, n, k):
    """Triton 3 lowers block pointers to pointer tensors masked by `index >= 0` and
    `index < size`: the first bounds nothing (tile accesses clip at 0)."""
    kern = _kernel(GELU)
    g = torch.Generator().manual_seed(m * 3 + k)
    a, b = torch.randn(m, k, generator=g).half(), torch.randn(k, n, generator=g).half()
    c = torch.full((m, n), float("nan")).half()
    interpret(kern, [a, b, c], _grid(kern, {"c": (m, n)}))
    ref = torch.nn.functional.gelu(a.float() @ b.float())
    assert not torch.isnan(c).any() and _err(c, ref) < 2e-3


@pytest.mark.parametrize(("m", "n", "k"), SIZES)
def test_a_swizzle2d_order_and_a_residual(m, n, k):
    kern = _kernel(SWIZZLE)
    g = torch.Generator().manual_seed(m * 5 + k)
    a, b = torch.randn(m, k, generator=g).half(), torch.randn(k, n, generator=g).half()
    r = torch.randn(m, n, generator=g).half()
    c = torch.full((m, n), float("nan")).half()
    interpret(kern, [a, b, r, c], _grid(kern, {"c": (m, n)}))
    assert not torch.isnan(c).any() and _err(c, a.float() @ b.float() + r.float()) < 2e-3


def test_the_gelu_and_residual_kernels_assemble_without_spills():
    for path in (GELU, SWIZZLE):
        res = compile_module(parse_file(path), cubin=True)
        assert re.search(r"\b0 bytes spill stores", res.ptxas_report), path.name
    gelu = compile_module(parse_file(GELU), cubin=False).ptx
    assert "rcp.rn.f32" in gelu and "selp.f32" in gelu  # erf: no PTX instruction


def test_the_row_softmax_of_one_row_per_program_matches_torch():
    """Its `other=-inf` is the tile load's padding, its 1-d row's `tl.max` and `tl.sum`
    reductions to scalars (`tile.reduce ... -> f32`), splat back over the row."""
    kern = _kernel(SOFTMAX)
    assert [o.result.type for o in kern.walk() if isinstance(o, tile.ReduceOp)] == [f32, f32]
    g = torch.Generator().manual_seed(5)
    for rows, cols in ((37, 781), (3, 1024), (5, 1)):
        x = torch.randn(rows, cols, generator=g) * 3
        y = torch.full((rows, cols), float("nan"))
        interpret(kern, [x, y], (rows, 1, 1))
        assert (y - torch.softmax(x, -1)).abs().max().item() < 1e-6


@pytest.mark.gpu
@requires_gpu
def test_gelu_and_residual_from_python_on_the_gpu():
    pytest.importorskip("triton")
    import tawac.triton

    src = _source()
    m, n, k = 1000, 3000, 520
    a = torch.randn(m, k, device="cuda").half()
    b = torch.randn(k, n, device="cuda").half()
    r = torch.randn(m, n, device="cuda").half()
    consts = {"BM": 128, "BN": 128, "BK": 64}
    for name, extra, ref in (
        ("unseen_block_ptr_gelu", (), torch.nn.functional.gelu(a.float() @ b.float())),
        ("unseen_swizzle_residual", (r,), a.float() @ b.float() + r.float()),
    ):
        cfg = src.TTIR_VARIANTS[name]
        fn = tawac.triton.compile(cfg["kernel"], signature=cfg["signature"], constexprs=consts)
        c = torch.full((m, n), float("nan"), device="cuda").half()
        fn[(1,)](a, b, *extra, c, m, n, k, *a.stride(), *b.stride(), *c.stride())
        torch.cuda.synchronize()
        assert _err(c, ref) < 2e-3, name


GQA = DATA / "unseen_gqa.ttir"


@pytest.mark.parametrize(("rows", "keys"), [(1, 300), (5, 129), (100, 300)])
def test_grouped_query_attention_groups_its_heads(rows, keys):
    """The K/V head `off_h // G` converts (an `arith.divui` of the head's program id), and
    `group-heads` gives one program the G query heads of a K/V head, as for tawac's own
    decode example: 8 rows of each of 8 heads per 64-row tile, K/V read once per group.
    (`group-heads` takes one `program_id * BM` per access, as the conversion computes
    them.)"""
    from tawac.passes.group_heads import group_kernel

    kern = _kernel(GQA)
    assert group_kernel(kern)
    b, h, hk, d = 2, 32, 4, 128
    grid = _grid(kern, {"Out": (b, h, rows, d)})
    assert grid == (math.ceil(rows / 8), h // 8, b)
    g = torch.Generator().manual_seed(rows * keys)
    q = torch.randn(b, h, rows, d, generator=g).bfloat16()
    k, v = (torch.randn(b, hk, keys, d, generator=g).bfloat16() for _ in range(2))
    o = torch.full((b, h, rows, d), float("nan")).bfloat16()
    interpret(kern, [q, k, v, o, 1 / math.sqrt(d)], grid)
    ref = _attention_ref(q, k.repeat_interleave(8, 1), v.repeat_interleave(8, 1), False)
    assert not torch.isnan(o.float()).any()
    assert (o.float() - ref).abs().max().item() < 2e-2


def test_grouped_query_attention_compiles_grouped_without_spills():
    from tawac.support.options import PipelineOptions
    from tawac.tools.explain import explain_module

    res = compile_module(parse_file(GQA), cubin=True)
    assert re.search(r"\b0 bytes spill stores", res.ptxas_report)
    info = explain_module(parse_file(GQA), PipelineOptions())
    assert info["group_heads"] == {"group": 8, "rows_per_head": 8}


@pytest.mark.gpu
@requires_gpu
def test_grouped_query_attention_from_python_on_the_gpu():
    """Through `tawac.triton`, at one query row (an argument of 1 that stays one) and
    8000 keys: 4 x 4 grouped programs get their keys split 4 ways (`fill_splits` on a
    132-SM H100 would give 8, but 63 key steps leave fewer than 8 per split); the
    result is right, as it is with the split turned off
    (`split_k=1`, a decomposition the caller names) and at 5 rows."""
    pytest.importorskip("triton")

    import tawac.triton
    from tawac.runtime.cuda_driver import _sm_count
    from tawac.schedule.tuning import fill_splits

    src = _source("unseen_attention")
    cfg = src.TTIR_VARIANTS["unseen_gqa"]
    sig, consts = cfg["signature"], cfg["constexprs"]
    auto = tawac.triton.compile(cfg["kernel"], signature=sig, constexprs=consts)
    plain = tawac.triton.compile(cfg["kernel"], signature=sig, constexprs=consts, split_k=1)
    b, h, hk, keys, d = 4, 32, 4, 8000, 128
    for rows in (1, 5):
        q = torch.randn(b, h, rows, d, device="cuda").bfloat16()
        k, v = (torch.randn(b, hk, keys, d, device="cuda").bfloat16() for _ in range(2))
        ref = _attention_ref(q, k.repeat_interleave(8, 1), v.repeat_interleave(8, 1), False)
        for fn in (auto, plain):
            o = torch.full_like(q, float("nan"))
            strides = [*q.stride()[:3], *k.stride()[:3], *v.stride()[:3], *o.stride()[:3]]
            args = (q, k, v, o, 1 / math.sqrt(d), rows, keys, *strides)
            fn[(1, h, b)](*args)
            torch.cuda.synchronize()
            assert (o.float() - ref).abs().max().item() < 2e-2, (rows, fn.options)
        s = fill_splits(16, _sm_count(torch.cuda.current_device()), math.ceil(keys / 128))
        assert auto.options_for(*args) == ({"split_k": s} if s > 1 else {})
        assert plain.options_for(*args) == {"split_k": 1}


def test_a_size_argument_of_one_stays_an_argument():
    """Triton's JIT specializes integer arguments equal to 1; `tawac.triton` does so for
    strides (a contiguous dimension) but not for an argument that sizes a tensor: one
    query row made `seqlen_q` the constant 1, a mask bound no size argument names (found
    on the GPU: "a mask bound 1 that is not a size argument")."""
    pytest.importorskip("triton")

    import tawac.triton

    src = _source("unseen_attention")
    cfg = src.TTIR_VARIANTS["unseen_gqa"]
    fn = tawac.triton.compile(
        cfg["kernel"], signature=cfg["signature"], constexprs=cfg["constexprs"]
    )
    assert {"seqlen_q", "seqlen_k"} <= fn.sizes()
    assert not {n for n in fn.sizes() if n.startswith("stride_")}


def test_fill_splits():
    """Split keys until the CTAs would overflow the machine's SMs, at most 32 ways (16
    where the loop's length is unknown) and 8 key steps a split; none where the programs
    fill a quarter of the machine (or there are none)."""
    from tawac.schedule.tuning import fill_splits

    assert [fill_splits(p, 132) for p in (0, 1, 4, 8, 16, 32, 33, 34, 64, 4096)] == [
        1, 16, 16, 16, 8, 4, 4, 1, 1, 1
    ]  # fmt: skip
    assert [fill_splits(p, 132, 1024) for p in (1, 4, 8, 16, 32, 34)] == [32, 32, 16, 8, 4, 1]
    assert [fill_splits(4, 132, s) for s in (0, 15, 16, 64, 255, 256)] == [1, 1, 2, 8, 16, 32]
    assert fill_splits(4, 132, 1024, cap=8) == 8


def test_the_key_loop_length_is_read_from_the_call(monkeypatch):
    """The GQA kernel's sidecar says its key loop runs over K's rows (`"key_split"`:
    `tile.dim %K[2]` in steps of 128), and a call's keys are split as `fill_splits` says
    for its programs (a query block of 8 rows for 8 grouped heads, per K/V head and
    batch) and that many steps, on a 132-SM H100."""
    pytest.importorskip("triton")

    import tawac.triton
    from tawac.schedule.tuning import fill_splits

    monkeypatch.setattr(tawac.triton, "_sms", lambda: 132)
    src = _source("unseen_attention")
    cfg = src.TTIR_VARIANTS["unseen_gqa"]
    fn = tawac.triton.compile(
        cfg["kernel"], signature=cfg["signature"], constexprs=cfg["constexprs"]
    )
    cases = ((1, 1, 8192, 8), (2, 5, 300, 1), (1, 1, 1, 1), (4, 1, 8000, 4), (1, 1, 2**17, 32))
    for b, rows, keys, split in cases:
        q = torch.zeros(b, 32, rows, 128).bfloat16()
        k, v = (torch.zeros(b, 4, keys, 128).bfloat16() for _ in range(2))
        strides = [*q.stride()[:3], *k.stride()[:3], *v.stride()[:3], *q.stride()[:3]]
        programs = math.ceil(rows / 8) * 4 * b
        assert fill_splits(programs, 132, math.ceil(keys / 128)) == split
        got = fn.options_for(q, k, v, q, 0.1, rows, keys, *strides)
        assert got == ({"split_k": split} if split > 1 else {}), (b, rows, keys)

"""The reference interpreter runs what the tile-level passes make (`split-k`'s split-K,
stream-K and split keys; `group-heads`, `swap-ab`, `widen`, `guard-masks`): each kernel
before and after the tile-level prefix of the pipeline, run on the CPU with the same
inputs, each over its own grid and with its workspace, gives the same outputs (the
translation validation of the tile-level rewrites), and a wrong combine is caught."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import tawac.runtime.interpret as interp_mod  # noqa: E402
from tawac.analysis.grid import workspace_of  # noqa: E402
from tawac.compiler import parse_file, parse_text, run_pipeline  # noqa: E402
from tawac.dialects import tile  # noqa: E402
from tawac.runtime.interpret import (  # noqa: E402
    InterpretError,
    default_stream_ctas,
    interpret,
    interpret_launch,
    launch_args,
    launch_grid,
    user_arguments,
    workspace_args,
)
from tawac.support.options import PipelineOptions  # noqa: E402

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
LOG2E = math.log2(math.e)

DTYPES = {
    "bf16": torch.bfloat16,
    "f16": torch.float16,
    "f32": torch.float32,
    "f8E4M3FN": torch.float8_e4m3fn,
    "f8E5M2": torch.float8_e5m2,
}


def _kernel(module) -> tile.KernelOp:
    return next(o for o in module.walk() if isinstance(o, tile.KernelOp))


def _before_after(source: str, params=None, **options) -> tuple[tile.KernelOp, tile.KernelOp]:
    """The kernel as written and after the tile-level passes of `options` (the pipeline
    up to `warp-specialize`)."""
    path = EXAMPLES / source
    before = _kernel(parse_file(path, params=params))
    module = parse_file(path, params=params)
    run_pipeline(module, PipelineOptions(**options).pipeline(stop="warp-specialize"))
    return before, _kernel(module)


def _stored(kernel: tile.KernelOp) -> set[str]:
    """The names of the user's tensor arguments the kernel stores into."""
    ws = workspace_of(kernel)
    names = {
        o.dest.name_hint for o in kernel.walk() if isinstance(o, tile.StoreOp) and o.dest.name_hint
    }
    return names - set(ws)


def _inputs(kernel: tile.KernelOp, sizes: dict, seed: int) -> dict:
    """Random inputs by argument name at `sizes` (dimension names and scalars); the
    outputs full of NaN, so that an element nobody writes shows."""
    g = torch.Generator().manual_seed(seed)
    out = _stored(kernel)
    values: dict = {}
    for a in kernel.body.block.args:
        name = a.name_hint
        if name in workspace_of(kernel):
            continue
        t = a.type
        if not isinstance(t, tile.GlobalTensorType):
            values[name] = sizes[name]
            continue
        shape = [sizes[d.data] for d in t.dim_names]
        dtype = DTYPES[str(t.element_type)]
        if name in out:
            values[name] = torch.full(shape, float("nan")).to(dtype)
        else:
            values[name] = torch.randn(*shape, generator=g).to(dtype)
    return values


def _run(
    kernel: tile.KernelOp, values: dict, sm_count: int | None = None, stats: dict | None = None
) -> dict:
    """Runs `kernel` on copies of `values` (its workspace allocated); its outputs by name
    (and the interpreter's statistics into `stats`)."""
    names = user_arguments(kernel)
    args = [v.clone() if isinstance(v, torch.Tensor) else v for v in (values[n] for n in names)]
    got = interpret_launch(kernel, args, sm_count=sm_count)
    if stats is not None:
        stats.update(got)
    return {n: a for n, a in zip(names, args, strict=True) if n in _stored(kernel)}


def _agree(before: dict, after: dict) -> None:
    """The outputs agree up to the accumulation order: a norm-wise relative error under
    1e-3 and no element more than one rounding step (of a narrow output) apart."""
    assert before.keys() == after.keys() and before
    for name, ref in before.items():
        got = after[name]
        assert not ref.float().isnan().any(), f"{name}: the reference left elements unwritten"
        assert not got.float().isnan().any(), f"{name}: elements unwritten after the passes"
        r, x = ref.float(), got.float()
        rel = float((x - r).norm() / r.norm().clamp_min(1e-30))
        assert rel < 1e-3, (name, rel)
        step = 2.0**-7 if ref.dtype == torch.bfloat16 else 2.0**-10
        assert torch.allclose(x, r, rtol=step, atol=1e-5), (name, (x - r).abs().max())


GEMM = {"M": 300, "N": 520}


@pytest.mark.parametrize(("k", "splits"), [(200, 4), (1000, 4), (200, 8), (1000, 3)])
def test_split_k_gemm_computes_what_the_gemm_computes(k, splits):
    """examples/gemm.mlir at a ragged size: 3 x 3 tiles of 128 x 256 over 4 or 16 K steps,
    in 3, 4 or 8 splits (K = 200 in 8 splits: four of them run no step)."""
    before, after = _before_after("gemm.mlir", split_k=splits)
    assert workspace_of(after) and launch_grid(after, {"c": (300, 520)}) == (3, 3, splits)
    values = _inputs(before, {**GEMM, "K": k}, seed=k + splits)
    ref = _run(before, values)
    want = values["a"].float() @ values["b"].float().T
    assert float((ref["c"].float() - want).norm() / want.norm()) < 1e-2
    _agree(ref, _run(after, values))


def _f32_gemm(**options) -> tuple[tile.KernelOp, tile.KernelOp]:
    """examples/gemm.mlir storing its f32 accumulator (no rounding of the output), as
    written and after the tile-level passes."""
    text = (EXAMPLES / "gemm.mlir").read_text()
    text = text.replace(
        '%c: !tile.tensor<?x?xbf16, ["M", "N"]>', '%c: !tile.tensor<?x?xf32, ["M", "N"]>'
    )
    text = text.replace(
        "tile.store %o, %c[%m0, %n0] : tensor<$BLOCK_Mx$BLOCK_Nxbf16> -> "
        '!tile.tensor<?x?xbf16, ["M", "N"]>',
        "tile.store %acc, %c[%m0, %n0] : tensor<$BLOCK_Mx$BLOCK_Nxf32> -> "
        '!tile.tensor<?x?xf32, ["M", "N"]>',
    )
    before = _kernel(parse_text(text, "gemm_f32.mlir"))
    module = parse_text(text, "gemm_f32.mlir")
    run_pipeline(module, PipelineOptions(**options).pipeline(stop="warp-specialize"))
    return before, _kernel(module)


@pytest.mark.parametrize("options", [{"split_k": 4}, {"split_k": 7}, {"stream_k": 4}])
def test_split_f32_outputs_agree_to_the_order_of_additions(options):
    """With an f32 output only the order of the f32 additions changes: a relative error
    of about 1e-7, and the split sum is the same bits whichever program is last."""
    before, after = _f32_gemm(**options)
    assert workspace_of(after)
    values = _inputs(before, {**GEMM, "K": 1000}, seed=9)
    ref, got = _run(before, values)["c"], _run(after, values)["c"]
    assert not got.isnan().any()
    assert float((got - ref).norm() / ref.norm()) < 1e-6
    assert torch.allclose(got, ref, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize(
    ("sm_count", "programs"), [(None, 12), (4, 12), (5, 9), (9, 9), (12, 9), (40, 36), (20, 18)]
)
def test_stream_k_gemm_computes_what_the_gemm_computes(sm_count, programs):
    """Stream-K by 4 of 9 tiles on 4 CTAs (8 whole tiles, the ninth split 4 ways: 12
    programs), 5 (5 whole tiles, 4 left, not split), 9 (one wave), 12, 20 and 40 (fewer
    tiles than CTAs: every tile split 1, 2 and 4 ways), and the interpreter's default (8
    CTAs: 8 whole tiles, one split 4 ways)."""
    before, after = _before_after("gemm.mlir", stream_k=4)
    assert any(isinstance(o, tile.SplitInfoOp) for o in after.walk())
    values = _inputs(before, {**GEMM, "K": 1000}, seed=7)
    stats: dict = {}
    _agree(_run(before, values), _run(after, values, sm_count=sm_count, stats=stats))
    assert stats["programs"] == programs


def test_default_stream_ctas_splits_a_tail():
    assert default_stream_ctas(9, 4) == 8
    assert default_stream_ctas(1, 4) == 4
    assert default_stream_ctas(2, 8) == 16


@pytest.mark.parametrize("options", [{"split_k": 4}, {"stream_k": 4}])
@pytest.mark.parametrize(
    ("source", "sizes"),
    [
        ("gemm_bias.mlir", {"M": 200, "N": 300, "K": 520, "alpha": 0.5}),
        ("gemm_residual.mlir", {"M": 200, "N": 300, "K": 520, "alpha": 0.5, "beta": -1.5}),
    ],
)
def test_split_epilogues_compute_what_they_compute(source, sizes, options):
    """An epilogue that reads a bias vector (moved under the last arrival) or a residual
    tile (loaded before it, by every program)."""
    before, after = _before_after(source, **options)
    values = _inputs(before, sizes, seed=3)
    _agree(_run(before, values), _run(after, values))


def test_split_k_fp8_gemm():
    before, after = _before_after("gemm_fp8.mlir", split_k=4)
    assert workspace_of(after)
    sizes = {"M": 150, "N": 300, "K": 1000, "scale_a": 0.25, "scale_b": 3.0}
    values = _inputs(before, sizes, seed=8)
    _agree(_run(before, values), _run(after, values))


def _agree_softmax(before: dict, after: dict, want) -> None:
    """Split keys change more than the order of additions: each split's probabilities
    are rounded to bf16 relative to its own row maximum, not the global one. So the
    outputs agree to about that rounding (0.5% of the largest element, 1% norm-wise),
    and the split output is as close to the float32 attention as the original."""
    ref, got = before["o"].float(), after["o"].float()
    assert not got.isnan().any(), "elements unwritten after the passes"
    assert float((got - ref).norm() / ref.norm()) < 1e-2
    assert float((got - ref).abs().max()) < 1e-2 * float(ref.abs().max())
    err_before = float((ref - want).norm() / want.norm())
    err_after = float((got - want).norm() / want.norm())
    assert err_after < 1.25 * err_before + 1e-4, (err_after, err_before)


def _decode_reference(values: dict):
    q, k, v = (values[n].float() for n in "qkv")
    kk, vv = k.repeat_interleave(8, 1), v.repeat_interleave(8, 1)
    return torch.softmax(q @ kk.transpose(-1, -2) / math.sqrt(128), dim=-1) @ vv


DECODE = {"B": 2, "H": 16, "L": 3, "HK": 2, "D": 128, "scale_log2e": LOG2E / math.sqrt(128)}


@pytest.mark.parametrize(
    ("keys", "splits"), [(333, 3), (2125, 16), (2125, 5), (200, 16), (2125, 32)]
)
def test_split_keys_decode_computes_what_the_decode_computes(keys, splits):
    """examples/attention_decode.mlir grouped (8 heads' rows stacked) with its keys split
    (3 and 5 splits: one combine; 16 and 32: two levels, groups of 4 and 8), against
    the kernel as written (a program per head); with 200 keys most of 16 splits are
    empty."""
    before, after = _before_after("attention_decode.mlir", split_k=splits)
    assert any(isinstance(o, tile.SplitSoftmaxOp) for o in after.walk())
    values = _inputs(before, {**DECODE, "S": keys}, seed=keys + splits)
    ref = _run(before, values)
    want = _decode_reference(values)
    assert (ref["o"].float() - want).abs().max() < 1e-2
    _agree_softmax(ref, _run(after, values), want)


@pytest.mark.parametrize(
    ("source", "params", "sizes", "options"),
    [
        ("gemm.mlir", None, {"M": 300, "N": 520, "K": 200}, {}),
        (
            "gemm.mlir",
            {"BLOCK_M": 16, "BLOCK_N": 64, "BLOCK_K": 64},
            {"M": 24, "N": 200, "K": 200},
            {"swap_ab": True},
        ),
        ("gemm_nn.mlir", None, {"M": 300, "N": 200, "K": 130}, {}),
        ("gemm_bias.mlir", None, {"M": 200, "N": 300, "K": 130, "alpha": 2.0}, {}),
        ("attention_decode.mlir", None, {**DECODE, "S": 333}, {}),
        ("attention.mlir", None, {"B": 1, "H": 2, "S": 200, "D": 128}, {}),
        ("attention_causal.mlir", None, {"B": 1, "H": 2, "S": 200, "D": 128}, {}),
    ],
)
def test_other_tile_passes_compute_what_the_kernel_computes(source, params, sizes, options):
    """The default tile-level passes (group-heads, widen, guard-masks) and swap-ab: every
    op they make runs on the interpreter, with the same outputs."""
    before, after = _before_after(source, params, **options)
    if options.get("swap_ab"):
        assert any(o.transposed is not None for o in after.walk() if isinstance(o, tile.StoreOp))
    sizes = {"scale_log2e": LOG2E / math.sqrt(128), **sizes}
    values = _inputs(before, sizes, seed=11)
    _agree(_run(before, values), _run(after, values))


# ---- a wrong split is caught


def test_a_dropped_partial_is_caught(monkeypatch):
    """The comparison can fail: a split_sum that drops the last partial differs."""
    before, after = _before_after("gemm.mlir", split_k=4)
    values = _inputs(before, {**GEMM, "K": 1000}, seed=5)
    ref = _run(before, values)
    _agree(ref, _run(after, values))
    original = interp_mod._Interpreter.split_sum

    def drop_one(self, op, active):
        saved = self.env[op.count]
        self.env[op.count] = saved - 1
        try:
            return original(self, op, active)
        finally:
            self.env[op.count] = saved

    monkeypatch.setattr(interp_mod._Interpreter, "split_sum", drop_one)
    with pytest.raises(AssertionError):
        _agree(ref, _run(after, values))


def test_a_dropped_softmax_partial_is_caught(monkeypatch):
    before, after = _before_after("attention_decode.mlir", split_k=3)
    values = _inputs(before, {**DECODE, "S": 333}, seed=6)
    ref = _run(before, values)
    original = interp_mod._Interpreter.split_softmax

    def drop_one(self, op, active):
        saved = self.env[op.count]
        self.env[op.count] = saved - 1
        try:
            return original(self, op, active)
        finally:
            self.env[op.count] = saved

    _agree_softmax(ref, _run(after, values), _decode_reference(values))
    monkeypatch.setattr(interp_mod._Interpreter, "split_softmax", drop_one)
    with pytest.raises(AssertionError):
        _agree_softmax(ref, _run(after, values), _decode_reference(values))


def test_a_ticket_left_counting_is_caught(monkeypatch):
    """A counter the kernel does not set back to zero breaks the next launch (the
    launcher zeroes its tickets once): `interpret_launch` refuses it."""
    _, after = _before_after("gemm.mlir", split_k=4)
    values = _inputs(after, {**GEMM, "K": 200}, seed=1)
    original = interp_mod._Interpreter.arrive

    def no_reset(self, op, active):
        last = original(self, op, active)
        t = self.get(op.counters)
        t[tuple(self.get(i)[last] for i in op.indices)] = 7
        return last

    monkeypatch.setattr(interp_mod._Interpreter, "arrive", no_reset)
    with pytest.raises(InterpretError, match="tawac_splitk_tickets is not zero after the launch"):
        _run(after, values)


# ---- the ops themselves


def _parse(text: str) -> tile.KernelOp:
    return _kernel(parse_text(text, "k.mlir"))


ARRIVE = """tile.kernel @k(%t: !tile.tensor<?xi32>, %out: !tile.tensor<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %n = arith.constant $N : index
  %x = tile.program_id x
  %slot = arith.divui %x, %n : index
  %last = tile.arrive %t[%slot] count %n : !tile.tensor<?xi32>
  %one = arith.constant dense<1.0> : tensor<1x1xf32>
  scf.if %last {
    tile.store %one, %out[%x, %c0] : tensor<1x1xf32> -> !tile.tensor<?x?xf32>
  }
  tile.return
}"""


def test_arrive_makes_the_last_by_program_order_and_resets():
    """Programs 0..5 arrive at counters x / 3 (three each, count 3): the last of each
    three by program index is the last; the counters are zero again."""
    kernel = _parse(ARRIVE.replace("$N", "3"))
    t = torch.zeros(2, dtype=torch.int32)
    out = torch.zeros(6, 1)
    interpret(kernel, [t, out], (6, 1, 1))
    assert out.flatten().tolist() == [0, 0, 1, 0, 0, 1]
    assert t.tolist() == [0, 0]


def test_arrive_counts_on_from_the_counter_and_outside_counts_nothing():
    """A counter at 1 already: the second arrival of count 3 is the last, the third
    starts counting again; a counter outside the tensor answers false."""
    kernel = _parse(ARRIVE.replace("$N", "3"))
    t = torch.tensor([1], dtype=torch.int32)
    out = torch.zeros(6, 1)
    interpret(kernel, [t, out], (6, 1, 1))  # programs 3..5 arrive outside t
    assert out.flatten().tolist() == [0, 1, 0, 0, 0, 0]
    assert t.tolist() == [1]


SUM = """tile.kernel @k(%w: !tile.tensor<?x?x?xf32>, %out: !tile.tensor<?x?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %s = tile.split_sum %w[%c0, %c0, %c0] count %n max 3 : !tile.tensor<?x?x?xf32>
    -> tensor<1x2xf32>
  tile.store %s, %out[%c0, %c0] : tensor<1x2xf32> -> !tile.tensor<?x?xf32>
  tile.return
}"""


def test_split_sum_adds_in_split_order_and_reads_zeros_outside():
    """(1e8 + 1) + -1e8 is 0 in f32 (1 in another order); the second column lies
    outside the tensor and reads as zero; a count past `max` is an error."""
    kernel = _parse(SUM)
    w = torch.tensor([1e8, 1.0, -1e8]).view(3, 1, 1)
    out = torch.full((1, 1), float("nan"))
    interpret(kernel, [w, out, 3], (1, 1, 1))
    assert out.item() == 0.0
    interpret(kernel, [w, out, 2], (1, 1, 1))
    assert out.item() == 1e8  # 1e8 + 1 rounds to 1e8 in f32
    w[1] = 8.0
    interpret(kernel, [w, out, 2], (1, 1, 1))
    assert out.item() == 1e8 + 8
    with pytest.raises(InterpretError, match="count 4 past its max 3"):
        interpret(kernel, [w, out, 4], (1, 1, 1))


SOFTMAX = """tile.kernel @k(%po: !tile.tensor<?x?x?xf32>, %pm: !tile.tensor<?x?xf32>,
    %pl: !tile.tensor<?x?xf32>, %o: !tile.tensor<?x?xf32>, %m: !tile.tensor<?xf32>,
    %l: !tile.tensor<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %oo, %mm, %ll = tile.split_softmax %po[%c0, %c0, %c0], %pm, %pl count %n max 4 $BASE
    : !tile.tensor<?x?x?xf32>, !tile.tensor<?x?xf32>, !tile.tensor<?x?xf32>
    -> tensor<4x2xf32>, tensor<4xf32>
  tile.store %oo, %o[%c0, %c0] : tensor<4x2xf32> -> !tile.tensor<?x?xf32>
  tile.store %mm, %m[%c0] : tensor<4xf32> -> !tile.tensor<?xf32>
  tile.store %ll, %l[%c0] : tensor<4xf32> -> !tile.tensor<?xf32>
  tile.return
}"""


@pytest.mark.parametrize("base", ["exp2", "exp"])
def test_split_softmax_combines_the_partials(base):
    """3 slices of 3 rows (a fourth row outside the tensors: not stored); row 2 of
    slice 1 empty (m = -inf); the combination against the formula."""
    kernel = _parse(SOFTMAX.replace("$BASE", base))
    g = torch.Generator().manual_seed(0)
    po = torch.randn(3, 3, 2, generator=g)
    pm = torch.randn(3, 3, generator=g)
    pl = torch.rand(3, 3, generator=g) + 0.5
    pm[1, 2] = float("-inf")
    po[1, 2] = 0.0
    pl[1, 2] = 0.0
    o, m, l_ = torch.zeros(3, 2), torch.zeros(3), torch.zeros(3)
    interpret(kernel, [po, pm, pl, o, m, l_, 3], (1, 1, 1))
    f = torch.exp2 if base == "exp2" else torch.exp
    big = pm.max(dim=0).values
    w = f(pm - big)
    assert torch.allclose(m, big)
    assert torch.allclose(l_, (w * pl).sum(0))
    assert torch.allclose(o, (w.unsqueeze(-1) * po).sum(0))
    # two slices only: the third is not read
    interpret(kernel, [po, pm, pl, o, m, l_, 2], (1, 1, 1))
    assert torch.allclose(m, pm[:2].max(dim=0).values)


def test_workspace_args_follow_the_kernel_attribute():
    """Split-K by 4 of 300 x 520: partials [4, 300, 520] f32 (poisoned with NaN: the
    kernel writes before it reads), tickets [3, 3] i32 zeros; stream-K's are one tile
    and one counter per CTA."""
    _, after = _before_after("gemm.mlir", split_k=4)
    ws = workspace_args(after, {"a": (300, 1000), "b": (520, 1000), "c": (300, 520)})
    assert list(ws) == ["tawac_splitk_partials", "tawac_splitk_tickets"]
    p, t = ws.values()
    assert p.shape == (4, 300, 520) and p.dtype == torch.float32 and p.isnan().all()
    assert t.shape == (3, 3) and t.dtype == torch.int32 and (t == 0).all()
    args = launch_args(
        after, [torch.zeros(300, 1000), torch.zeros(520, 1000), torch.zeros(300, 520)]
    )
    assert [tuple(a.shape) for a in args] == [
        (300, 1000),
        (520, 1000),
        (300, 520),
        (4, 300, 520),
        (3, 3),
    ]
    _, stream = _before_after("gemm.mlir", stream_k=4)
    shapes = {"a": (300, 1000), "b": (520, 1000), "c": (300, 520)}
    p, t = workspace_args(stream, shapes, sm_count=12).values()
    assert p.shape == (12, 128, 256) and t.shape == (12,)
    p, t = workspace_args(stream, shapes).values()  # default: 9 tiles on 8 CTAs
    assert p.shape == (8, 128, 256)


def test_stream_k_refuses_a_workspace_smaller_than_the_ctas():
    before, after = _before_after("gemm.mlir", stream_k=4)
    values = _inputs(before, {**GEMM, "K": 200}, seed=2)
    args = [values[n] for n in user_arguments(after)]
    full = launch_args(after, args, sm_count=4)
    with pytest.raises(InterpretError, match="12 CTAs"):
        interpret(after, full, launch_grid(after, {"c": (300, 520)}), sm_count=12)

"""Attention backward from tile programs: the forward that saves the log-sum-exp
(`examples/attention_lse.mlir`), the preprocessing delta = rowsum(O * dO)
(`attention_bwd_pre.mlir`), dK and dV over the query blocks (`attention_bwd_dkdv.mlir`)
and dQ over the key blocks (`attention_bwd_dq.mlir`). On the CPU the interpreter runs the
four kernels one after another and agrees with float32 autograd through torch's attention
at ragged lengths; each kernel compiles to wgmma PTX that ptxas assembles without spills.
On the GPU, the four kernels through `tawac.torch` agree with autograd."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from gpu_util import assert_assembles_without_spills, assert_trains_alike, requires_gpu

from tawac.compiler import compile_file, parse_file
from tawac.dialects import tile
from tawac.runtime.interpret import interpret_launch
from tawac.torch import attention_params

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
KERNELS = ["attention_lse", "attention_bwd_pre", "attention_bwd_dkdv", "attention_bwd_dq"]
#: The causal and the grouped-query forward and backward kernels (the preprocessing is the
#: same).
CAUSAL = ["attention_causal_lse", "attention_bwd_dkdv_causal", "attention_bwd_dq_causal"]
GQA = ["attention_gqa_lse", "attention_bwd_dkdv_gqa", "attention_bwd_dq_gqa"]
#: The forward kernel of each variant.
FORWARD = {"full": "attention_lse", "causal": "attention_causal_lse", "gqa": "attention_gqa_lse"}
LOG2E = 1.4426950408889634


def _inputs(b: int, h: int, s: int, d: int, device: str, seed: int = 0, hk: int | None = None):
    """bf16 q, k, v, do of [b, h, s, d] from a seeded generator (k and v of `hk` heads)."""
    import torch

    g = torch.Generator(device=device).manual_seed(seed)
    heads = (h, hk or h, hk or h, h)
    return [torch.randn(b, n, s, d, device=device, generator=g).to(torch.bfloat16) for n in heads]


def _reference(q, k, v, do, scale: float, causal: bool = False):
    """O, dQ, dK, dV in float32: autograd through softmax(Q K^T scale) V (query i attending
    to keys j <= i only with `causal`)."""
    import torch

    qf, kf, vf = (t.float().requires_grad_() for t in (q, k, v))
    group = q.shape[1] // k.shape[1]  # grouped-query: each K/V head serves `group` heads
    kg, vg = kf.repeat_interleave(group, dim=1), vf.repeat_interleave(group, dim=1)
    scores = qf @ kg.transpose(-1, -2) * scale
    if causal:
        s = q.shape[2]
        later = torch.ones(s, s, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(later, float("-inf"))
    p = torch.softmax(scores, dim=-1)
    o = p @ vg
    o.backward(do.float())
    return o.detach(), qf.grad, kf.grad, vf.grad


def _kernel(name: str, d: int) -> tile.KernelOp:
    module = parse_file(EXAMPLES / f"{name}.mlir", params=attention_params(name, d))
    return next(o for o in module.walk() if isinstance(o, tile.KernelOp))


def _close(name: str, got, want, rtol: float = 3e-2) -> None:
    err = float((got.float() - want).norm() / want.norm())
    assert err < rtol, f"{name}: relative error {err:.3g}"


def _backward(run, q, k, v, do, scale: float, variant: str = "full"):
    """O, lse, dQ, dK, dV from the four kernels of `variant` (full, causal or gqa;
    `run(name, args)` launches one)."""
    tail = "" if variant == "full" else f"_{variant}"
    import torch

    b, h, s, d = q.shape
    dev = q.device
    o = torch.full_like(q, float("nan"))
    lse = torch.full((b, h, s), float("nan"), device=dev)
    run(FORWARD[variant], [q, k, v, o, lse, scale * LOG2E])
    delta = torch.full((b, h, s), float("nan"), device=dev)
    run("attention_bwd_pre", [o, do, delta])
    dq = torch.full_like(q, float("nan"))
    dk, dv = torch.full_like(k, float("nan")), torch.full_like(v, float("nan"))
    run(f"attention_bwd_dkdv{tail}", [q, k, v, do, lse, delta, dk, dv, scale * LOG2E])
    run(f"attention_bwd_dq{tail}", [q, k, v, do, lse, delta, dq, scale * LOG2E])
    return o, lse, dq, dk, dv


@pytest.mark.parametrize("variant", ["full", "causal", "gqa"])
@pytest.mark.parametrize(("s", "d"), [(200, 64), (77, 128)])
def test_the_interpreter_agrees_with_autograd(s, d, variant):
    """The four kernels in the interpreter at a ragged length (a partial key and query
    block) against autograd, and the saved log-sum-exp against torch's (in base 2);
    grouped-query: 4 query heads on 2 key/value heads."""
    import torch

    causal = variant == "causal"
    q, k, v, do = _inputs(1, 4, s, d, "cpu", hk=2 if variant == "gqa" else None)
    scale = 1 / math.sqrt(d)

    def run(name, args):
        interpret_launch(_kernel(name, d), args)

    o, lse, dq, dk, dv = _backward(run, q, k, v, do, scale, variant)
    want_o, want_dq, want_dk, want_dv = _reference(q, k, v, do, scale, causal)
    kg = k.float().repeat_interleave(q.shape[1] // k.shape[1], dim=1)
    scores = q.float() @ kg.transpose(-1, -2) * scale
    if causal:
        later = torch.ones(s, s, dtype=torch.bool).triu(1)
        scores = scores.masked_fill(later, float("-inf"))
    _close("lse", lse, torch.logsumexp(scores, dim=-1) * LOG2E, rtol=1e-3)
    _close("o", o, want_o)
    _close("dq", dq, want_dq)
    _close("dk", dk, want_dk)
    _close("dv", dv, want_dv)


def test_a_row_vector_load_reads_the_tensors_leading_dimensions():
    """lse[b, h, m0 ...] of a [B, H, S] tensor, loaded straight into the slice layout of
    its broadcast, is read at b and h through the tensor's strides (the load read
    lse[b ...] as if the tensor were 1-d, and dQ, dK, dV came out wrong on the GPU)."""
    ptx = compile_file(EXAMPLES / "attention_bwd_dq.mlir").ptx
    for arg in ("lse", "delta"):
        for d in (0, 1):
            assert f"[{arg}_stride{d}]" in ptx, (arg, d)


@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("name", KERNELS + CAUSAL + GQA)
def test_each_kernel_assembles_without_spills(name, d):
    res = compile_file(EXAMPLES / f"{name}.mlir", params=attention_params(name, d))
    assert ("wgmma.mma_async" in res.ptx) == (name != "attention_bwd_pre")
    assert_assembles_without_spills(res.ptx)


class _Interpreted:
    """Stands in for a loaded kernel (`tawac.runtime.load_kernel`): runs the tile program
    the sidecar names in the interpreter, on the launch's arguments."""

    def __init__(self, cubin, sidecar):
        self.sidecar = sidecar
        self.kernel = _kernel(sidecar["kernel"], sidecar["kernel_params"]["HEAD_DIM"])

    def __call__(self, *args, stream=None):
        interpret_launch(self.kernel, list(args))


@pytest.mark.parametrize("variant", ["full", "causal", "gqa"])
def test_the_autograd_function_agrees_with_autograd_in_the_interpreter(monkeypatch, variant):
    """`tawac.torch.attention` forward and backward (its kernels compiled, then run in the
    interpreter on the CPU) against autograd through torch's attention."""
    import torch

    import tawac.torch as tt

    monkeypatch.setattr(tt, "load_kernel", _Interpreted)
    monkeypatch.setattr(tt, "DEVICE_TYPES", frozenset({"cuda", "cpu"}))
    monkeypatch.setattr(tt, "_TRAINING", {})
    causal = variant == "causal"
    q, k, v, do = _inputs(1, 4, 100, 64, "cpu", seed=5, hk=2 if variant == "gqa" else None)
    leaves = [t.clone().requires_grad_() for t in (q, k, v)]
    o = tt.attention(*leaves, causal=causal)
    o.backward(do)
    want_o, want_dq, want_dk, want_dv = _reference(q, k, v, do, 64**-0.5, causal)
    _close("o", o.detach(), want_o)
    for name, leaf, want in zip("qkv", leaves, (want_dq, want_dk, want_dv), strict=True):
        assert leaf.grad is not None and leaf.grad.dtype == torch.bfloat16, name
        _close(f"d{name}", leaf.grad, want)


def test_the_autograd_function_refuses_other_head_dims():
    import torch

    import tawac.torch as tt
    from tawac.runtime.arguments import LaunchError

    q = torch.zeros(1, 1, 8, 96, dtype=torch.bfloat16)
    with pytest.raises(LaunchError, match="head dimension 96; 64 and 128 are supported"):
        tt.attention(q, q, q)


# ---- on the GPU


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("variant", ["full", "causal", "gqa"])
@pytest.mark.parametrize(("b", "h", "s"), [(1, 2, 333), (2, 4, 1000), (1, 2, 64)])
@pytest.mark.parametrize("d", [64, 128])
def test_on_the_gpu_it_agrees_with_autograd(b, h, s, d, variant):
    import torch

    import tawac.torch

    hk = h // 2 if variant == "gqa" else None
    q, k, v, do = _inputs(b, h, s, d, "cuda", seed=s + d, hk=hk)
    scale = 1 / math.sqrt(d)
    kernels = {
        name: tawac.torch.kernel(EXAMPLES / f"{name}.mlir", params=attention_params(name, d))
        for name in KERNELS + CAUSAL + GQA
    }

    def run(name, args):
        kernels[name](*args)

    o, lse, dq, dk, dv = _backward(run, q, k, v, do, scale, variant)
    torch.cuda.synchronize()
    want_o, want_dq, want_dk, want_dv = _reference(q, k, v, do, scale, variant == "causal")
    _close("o", o, want_o)
    _close("dq", dq, want_dq)
    _close("dk", dk, want_dk)
    _close("dv", dv, want_dv)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("d", [64, 128])
def test_a_training_step_matches_sdpa(d, causal):
    """Two attention layers with projections, a few SGD steps: tawac.torch.attention's
    gradients match those of torch's SDPA on the same weights, step after step, eager and
    under torch.compile (no graph break at the custom operators: fullgraph)."""
    import torch
    import torch.nn.functional as F

    import tawac.torch

    def block(attn, x, ws):
        for w in ws:
            b, s, e = x.shape
            qkv = (x @ w).view(b, s, 3, e // d, d).permute(2, 0, 3, 1, 4)
            o = attn(qkv[0].contiguous(), qkv[1].contiguous(), qkv[2].contiguous())
            x = x + o.permute(0, 2, 1, 3).reshape(b, s, e)
        return x.float().square().mean()

    g = torch.Generator(device="cuda").manual_seed(d)
    e, b, s = 2 * d, 2, 300
    x = torch.randn(b, s, e, device="cuda", generator=g).to(torch.bfloat16)
    init = [(torch.randn(e, 3 * e, device="cuda", generator=g) / e**0.5) for _ in range(2)]
    ours = [w.to(torch.bfloat16).requires_grad_() for w in init]
    theirs = [w.to(torch.bfloat16).requires_grad_() for w in init]

    def tawac_attention(q, k, v):
        return tawac.torch.attention(q, k, v, causal=causal)

    def sdpa(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    assert_trains_alike(
        lambda ws: block(tawac_attention, x, ws),
        lambda ws: block(sdpa, x, ws),
        ours,
        theirs,
        lr=0.1,
        grad_rtol=5e-2,
    )

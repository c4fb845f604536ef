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
from gpu_util import assert_assembles_without_spills, requires_gpu

from tawac.compiler import compile_file, parse_file
from tawac.dialects import tile
from tawac.runtime.interpret import interpret_launch

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
KERNELS = ["attention_lse", "attention_bwd_pre", "attention_bwd_dkdv", "attention_bwd_dq"]
LOG2E = 1.4426950408889634


def _params(name: str, d: int) -> dict:
    """The parameters each kernel documents for head dimension `d` (dK/dV: 32 queries a
    step at 128, 64 at 64)."""
    if name == "attention_bwd_dkdv":
        return {"HEAD_DIM": d, "BLOCK_M": 32 if d == 128 else 64}
    return {"HEAD_DIM": d}


def _inputs(b: int, h: int, s: int, d: int, device: str, seed: int = 0):
    """bf16 q, k, v, do of [b, h, s, d] from a seeded generator."""
    import torch

    g = torch.Generator(device=device).manual_seed(seed)
    return [torch.randn(b, h, s, d, device=device, generator=g).to(torch.bfloat16) for _ in "qkvd"]


def _reference(q, k, v, do, scale: float):
    """O, dQ, dK, dV in float32: autograd through softmax(Q K^T scale) V."""
    import torch

    qf, kf, vf = (t.float().requires_grad_() for t in (q, k, v))
    p = torch.softmax(qf @ kf.transpose(-1, -2) * scale, dim=-1)
    o = p @ vf
    o.backward(do.float())
    return o.detach(), qf.grad, kf.grad, vf.grad


def _kernel(name: str, d: int) -> tile.KernelOp:
    module = parse_file(EXAMPLES / f"{name}.mlir", params=_params(name, d))
    return next(o for o in module.walk() if isinstance(o, tile.KernelOp))


def _close(name: str, got, want, rtol: float = 3e-2) -> None:
    err = float((got.float() - want).norm() / want.norm())
    assert err < rtol, f"{name}: relative error {err:.3g}"


def _backward(run, q, k, v, do, scale: float):
    """O, lse, dQ, dK, dV from the four kernels (`run(name, args)` launches one)."""
    import torch

    b, h, s, d = q.shape
    dev = q.device
    o = torch.full_like(q, float("nan"))
    lse = torch.full((b, h, s), float("nan"), device=dev)
    run("attention_lse", [q, k, v, o, lse, scale * LOG2E])
    delta = torch.full((b, h, s), float("nan"), device=dev)
    run("attention_bwd_pre", [o, do, delta])
    dq, dk, dv = (torch.full_like(q, float("nan")) for _ in range(3))
    run("attention_bwd_dkdv", [q, k, v, do, lse, delta, dk, dv, scale * LOG2E])
    run("attention_bwd_dq", [q, k, v, do, lse, delta, dq, scale * LOG2E])
    return o, lse, dq, dk, dv


@pytest.mark.parametrize(("s", "d"), [(200, 64), (77, 128)])
def test_the_interpreter_agrees_with_autograd(s, d):
    """The four kernels in the interpreter at a ragged length (a partial key and query
    block) against autograd, and the saved log-sum-exp against torch's (in base 2)."""
    import torch

    q, k, v, do = _inputs(1, 2, s, d, "cpu")
    scale = 1 / math.sqrt(d)

    def run(name, args):
        interpret_launch(_kernel(name, d), args)

    o, lse, dq, dk, dv = _backward(run, q, k, v, do, scale)
    want_o, want_dq, want_dk, want_dv = _reference(q, k, v, do, scale)
    scores = q.float() @ k.float().transpose(-1, -2) * scale
    _close("lse", lse, torch.logsumexp(scores, dim=-1) * LOG2E, rtol=1e-3)
    _close("o", o, want_o)
    _close("dq", dq, want_dq)
    _close("dk", dk, want_dk)
    _close("dv", dv, want_dv)


@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("name", KERNELS)
def test_each_kernel_assembles_without_spills(name, d):
    res = compile_file(EXAMPLES / f"{name}.mlir", params=_params(name, d))
    assert ("wgmma.mma_async" in res.ptx) == (name != "attention_bwd_pre")
    assert_assembles_without_spills(res.ptx)


# ---- on the GPU


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(("b", "h", "s"), [(1, 2, 333), (2, 3, 1000), (1, 1, 64)])
@pytest.mark.parametrize("d", [64, 128])
def test_on_the_gpu_it_agrees_with_autograd(b, h, s, d):
    import torch

    import tawac.torch

    q, k, v, do = _inputs(b, h, s, d, "cuda", seed=s + d)
    scale = 1 / math.sqrt(d)
    kernels = {
        name: tawac.torch.kernel(EXAMPLES / f"{name}.mlir", params=_params(name, d))
        for name in KERNELS
    }

    def run(name, args):
        kernels[name](*args)

    o, lse, dq, dk, dv = _backward(run, q, k, v, do, scale)
    torch.cuda.synchronize()
    want_o, want_dq, want_dk, want_dv = _reference(q, k, v, do, scale)
    _close("o", o, want_o)
    _close("dq", dq, want_dq)
    _close("dk", dk, want_dk)
    _close("dv", dv, want_dv)

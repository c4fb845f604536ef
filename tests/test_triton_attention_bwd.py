"""The Triton tutorial's fused-attention backward (`_attn_bwd` of
`examples/triton/attention_bwd.py`: per program, dK and dV of a 128-key block over the
masked diagonal then the rest, and dQ of a 128-query block likewise; pointer tensors,
runtime row stride, K pre-scaled) and its `_attn_bwd_preprocess` (delta = rowsum(O dO),
rows of a constexpr length) through `convert-ttir`: the converted tile kernels run by the
CPU interpreter on the views Triton's arguments give (`tawac.triton`), against float32
autograd; the cubin assembled without spills; on the GPU, the same from `.ttir` and from
Python through `tawac.triton.compile`."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from gpu_util import load_module, requires_gpu

from tawac.compiler import compile_module, parse_file
from tawac.dialects import tile
from tawac.runtime.interpret import interpret
from tawac.triton import TritonKernel, kernel_abi

REPO = Path(__file__).resolve().parent.parent
SOURCE = REPO / "examples/triton/attention_bwd.ttir"
D = 64  # HEAD_DIM, compiled in (the tutorial's constexprs)
RCP_LN2 = 1.4426950408889634
PARAMS = ["Q", "K", "V", "sm_scale", "DO", "DQ", "DK", "DV", "M", "D",
          "stride_z", "stride_h", "stride_tok", "stride_d", "H", "N_CTX"]  # fmt: skip
PRE = REPO / "examples/triton/attention_bwd_preprocess.ttir"
PRE_PARAMS = ["O", "DO", "Delta", "Z", "H", "N_CTX"]


def _inputs(z, h, n, seed, device="cpu"):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(z, h, n, D, generator=g).mul(0.5).half().to(device) for _ in "qkv")
    do = torch.randn(z, h, n, D, generator=g).half().to(device)
    return q, k, v, do


def _reference(q, k, v, do, scale):
    """float32 autograd of causal attention; the forward's base-2 log-sum-exp M and
    delta = rowsum(O dO) (what `_attn_bwd_preprocess` computes), as the tutorial's
    `_attention.backward` passes them."""
    n = q.shape[2]
    qf, kf, vf = (t.float().requires_grad_() for t in (q, k, v))
    s = (qf @ kf.transpose(-1, -2)) * scale
    keep = torch.ones(n, n, dtype=torch.bool, device=q.device).tril()
    s = s.masked_fill(~keep, float("-inf"))
    o = torch.softmax(s, -1) @ vf
    o.backward(do.float())
    lse = (torch.logsumexp(s, -1) / math.log(2)).detach().contiguous()
    delta = (o.detach().half().float() * do.float()).sum(-1).contiguous()
    return (qf.grad, kf.grad, vf.grad), lse, delta


def _call(kernel, q, k, v, do, scale, lse, delta):
    """The tutorial's backward launch: K pre-scaled by sm_scale / ln 2; (dQ, dK, dV)."""
    z, h, n = q.shape[:3]
    arg_k = (k.float() * (scale * RCP_LN2)).half()
    dq, dk, dv = (torch.full_like(q, float("nan")) for _ in range(3))
    kernel[(n // 128, 1, z * h)](q, arg_k, v, scale, do, dq, dk, dv, lse, delta,
                                 *q.stride(), h, n)  # fmt: skip
    return dq, dk, dv


def _check(got, ref):
    for name, g, r in zip(("dQ", "dK", "dV"), got, ref, strict=True):
        assert not torch.isnan(g).any(), name
        err = ((g.float() - r).abs().max() / r.abs().max()).item()
        assert err < 1e-2, f"{name}: relative error {err}"


@pytest.mark.parametrize(("z", "h", "n"), [(1, 2, 256), (2, 1, 384)])
def test_the_converted_tutorial_backward_matches_autograd(z, h, n):
    op = next(o for o in parse_file(SOURCE).walk() if isinstance(o, tile.KernelOp))
    # the tutorial's four loops (dK/dV masked and not, dQ masked and not), five MMAs a
    # dK/dV step and three a dQ step, the transposes as MMA operands
    assert sum(1 for o in op.walk() if o.name == "scf.for") == 4
    assert sum(1 for o in op.walk() if o.name == "tile.dot") == 14

    def launch(*args):
        interpret(op, list(args), (n // 128, h, z))  # the logical grid: blocks, heads, batch

    kernel = TritonKernel.from_abi(kernel_abi(SOURCE.read_text(), str(SOURCE)), launch,
                                   {"stride_d": 1}, "_attn_bwd", PARAMS)  # fmt: skip
    q, k, v, do = _inputs(z, h, n, seed=n)
    ref, lse, delta = _reference(q, k, v, do, 0.5)
    _check(_call(kernel, q, k, v, do, 0.5, lse, delta), ref)


def _preprocess(kernel, o, do):
    """The tutorial's preprocessing launch (128 rows a program): delta = rowsum(O dO)."""
    z, h, n = o.shape[:3]
    delta = torch.full((z, h, n), float("nan"), device=o.device)
    kernel[(n // 128, z * h)](o, do, delta, z, h, n)
    return delta


@pytest.mark.parametrize(("z", "h", "n"), [(1, 2, 256), (2, 3, 384)])
def test_the_converted_preprocess_computes_the_row_sums(z, h, n):
    """O and dO are read as rows of HEAD_DIM elements (a constexpr stride, which the ABI
    scales: `off_m * HEAD_DIM`), a head's first row at `off_hz * N_CTX` (N_CTX kept as
    the tile kernel's scalar, Delta's outer dimension named after Delta, not N_CTX)."""
    abi = kernel_abi(PRE.read_text(), str(PRE))
    assert [t.scales for t in abi.tensors] == [(64, 1), (64, 1), ()]
    assert abi.tensors[2].names == ("Delta0", "Delta1")
    assert ("index", PRE_PARAMS.index("N_CTX")) in abi.scalars
    op = next(o for o in parse_file(PRE).walk() if isinstance(o, tile.KernelOp))

    def launch(*args):
        interpret(op, list(args), (n // 128, z * h, 1))

    kernel = TritonKernel.from_abi(abi, launch, {}, "_attn_bwd_preprocess", PRE_PARAMS)
    g = torch.Generator().manual_seed(n)
    o, do = (torch.randn(z, h, n, D, generator=g).half() for _ in "od")
    want = (o.float() * do.float()).sum(-1)
    torch.testing.assert_close(_preprocess(kernel, o, do), want, rtol=1e-5, atol=1e-4)


def test_the_converted_backward_assembles_without_spills():
    res = compile_module(parse_file(SOURCE), cubin=True)
    assert "0 bytes spill stores" in res.ptxas_report
    assert res.sidecar["kernel"] == "_attn_bwd"


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(("z", "h", "n"), [(1, 2, 1024), (2, 3, 2048)])
def test_the_tutorial_backward_on_the_gpu_from_ttir_and_python(z, h, n):
    from tawac.triton import compile as tawac_compile
    from tawac.triton import from_ttir

    module = load_module(SOURCE.with_suffix(".py"))
    q, k, v, do = _inputs(z, h, n, seed=z + h + n, device="cuda")
    ref, lse, delta = _reference(q, k, v, do, 0.3)
    from_text = from_ttir(SOURCE.read_text(), str(SOURCE), {"stride_d": 1}, PARAMS)
    _check(_call(from_text, q, k, v, do, 0.3, lse, delta), ref)
    cfg = module.TTIR
    # stride_d stays an argument: tawac.triton specializes an integer argument equal to 1
    # at the first call, as Triton's launcher does
    consts = {k: v for k, v in cfg["constexprs"].items() if k != "stride_d"}
    from_python = tawac_compile(cfg["kernel"], signature=cfg["signature"], constexprs=consts)
    _check(_call(from_python, q, k, v, do, 0.3, lse, delta), ref)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(("z", "h", "n"), [(1, 2, 1024), (2, 3, 2048)])
def test_the_preprocess_and_the_backward_on_the_gpu_from_python(z, h, n):
    """The tutorial's backward as its `_attention.backward` runs it, both kernels through
    `tawac.triton.compile`: delta from `_attn_bwd_preprocess` of the forward's O (and
    from the shipped `.ttir`), then dQ, dK, dV from `_attn_bwd`."""
    from tawac.triton import compile as tawac_compile
    from tawac.triton import from_ttir

    module = load_module(SOURCE.with_suffix(".py"))
    q, k, v, do = _inputs(z, h, n, seed=z + h + n, device="cuda")
    ref, lse, want = _reference(q, k, v, do, 0.3)
    qf, kf, vf = (t.float() for t in (q, k, v))
    s = (qf @ kf.transpose(-1, -2)) * 0.3
    s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device="cuda").triu(1), float("-inf"))
    o = (torch.softmax(s, -1) @ vf).half()
    pre_cfg = module.TTIR_VARIANTS["attention_bwd_preprocess"]
    pre = tawac_compile(pre_cfg["kernel"], signature=pre_cfg["signature"],
                        constexprs=pre_cfg["constexprs"])  # fmt: skip
    delta = _preprocess(pre, o, do)
    torch.testing.assert_close(delta, want, rtol=1e-3, atol=1e-3)
    from_text = from_ttir(PRE.read_text(), str(PRE), {}, PRE_PARAMS)
    torch.testing.assert_close(_preprocess(from_text, o, do), delta, rtol=0, atol=0)
    cfg = module.TTIR
    consts = {k: v for k, v in cfg["constexprs"].items() if k != "stride_d"}
    bwd = tawac_compile(cfg["kernel"], signature=cfg["signature"], constexprs=consts)
    _check(_call(bwd, q, k, v, do, 0.3, lse, delta), ref)

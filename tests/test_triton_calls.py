"""`tawac.triton`'s call path: after a call, later calls with the same argument layout
take the kernel and a recipe of its arguments from a cache (`layout_key`,
`TritonKernel.recipe`); what they launch is what the full path builds. The launch is
replaced by a recorder, so no GPU is needed (Triton's front end is)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from gpu_util import load_module  # noqa: E402

import tawac.triton  # noqa: E402
from tawac.triton import layout_key  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return (
            isinstance(b, torch.Tensor)
            and a.shape == b.shape
            and a.stride() == b.stride()
            and a.data_ptr() == b.data_ptr()
            and a.dtype == b.dtype
        )
    return type(a) is type(b) and a == b


def _recorded(fn, args):
    """The kernel's arguments of a call on the full path and of the same call again
    (the cached path), with the launch recorded."""
    kernel = fn.specialize(*args)
    seen = []
    kernel.launch = lambda *a: seen.append(a)
    fn(*args)
    fn(*args)
    assert len(seen) == 2 and layout_key(args, fn._storage) in fn._calls
    return kernel.kernel_args(*args), seen


def test_the_tutorial_attention_views_its_lse_from_the_storage():
    """M is a 1-D view sized from its storage (Z x H x N_CTX floats): both paths give
    the same view, and the next call at another M layout takes the full path again."""
    cfg = load_module(REPO / "examples/triton/attention.py").TTIR
    consts = {k: v for k, v in cfg["constexprs"].items() if not k.startswith("stride_")}
    fn = tawac.triton.compile(cfg["kernel"], signature=cfg["signature"], constexprs=consts)
    z, h, n, d = 1, 2, 4096, 128
    q, k, v, o = (torch.zeros(z, h, n, d, dtype=torch.float16) for _ in range(4))
    m = torch.zeros(z, h, n)
    args = (q, k, v, 0.5, m, o, *q.stride(), *k.stride(), *v.stride(), *o.stride(), z, h)
    full, seen = _recorded(fn, args)
    assert all(_same(a, b) for a, b in zip(full, seen[0], strict=True))
    assert all(_same(a, b) for a, b in zip(full, seen[1], strict=True))
    assert any(isinstance(a, torch.Tensor) and a.dim() == 1 for a in seen[1])
    assert fn._storage  # M's one dimension is sized from its storage
    other = (*args[:4], torch.zeros(z, h, 2 * n), *args[5:])
    assert layout_key(other) not in fn._calls


def test_a_float_argument_is_passed_and_not_keyed():
    cfg = load_module(REPO / "tests/data/triton/unseen_attention.py").TTIR_VARIANTS["unseen_gqa"]
    fn = tawac.triton.compile(cfg["kernel"], signature=cfg["signature"],
                              constexprs=cfg["constexprs"], split_k=1)  # fmt: skip
    b, h, hk, rows, keys = 2, 32, 4, 3, 300
    q, o = (torch.zeros(b, h, rows, 128, dtype=torch.bfloat16) for _ in range(2))
    k, v = (torch.zeros(b, hk, keys, 128, dtype=torch.bfloat16) for _ in range(2))
    strides = [*q.stride()[:3], *k.stride()[:3], *v.stride()[:3], *o.stride()[:3]]
    args = (q, k, v, o, 1 / math.sqrt(128), rows, keys, *strides)
    full, seen = _recorded(fn, args)
    assert all(_same(a, b) for a, b in zip(full, seen[1], strict=True))
    kernel = fn.specialize(*args)
    fn(q, k, v, o, 0.25, rows, keys, *strides)
    assert seen[-1][4] == 0.25 and kernel is fn.specialize(*args)


def test_a_descriptor_or_other_object_takes_the_full_path():
    assert layout_key((torch.zeros(2), 3, 0.5)) is not None
    assert layout_key((torch.zeros(2), object())) is None
    assert layout_key((True,)) != layout_key((1,))

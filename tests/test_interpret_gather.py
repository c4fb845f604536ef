"""The interpreter's tile gather (`_Interpreter.gather`, under every load and split-k's
combines) against an element-by-element reference: random tensors and origins in and
out of bounds, tiles of lower rank than the tensor, stacked tiles, empty tensors."""

from __future__ import annotations

import itertools
import random

import pytest
import torch

from tawac.runtime.interpret import _Interpreter, _spanned


def _reference(g, starts, shape, stack):
    full = _spanned(g.dim(), shape, stack)
    out = torch.zeros((len(starts), *full))
    mask = torch.zeros((len(starts), *full), dtype=torch.bool)
    for p, start in enumerate(starts):
        for i in itertools.product(*(range(n) for n in full)):
            c = [o + k for o, k in zip(start, i, strict=True)]
            if all(0 <= x < s for x, s in zip(c, g.shape, strict=True)):
                out[(p, *i)] = float(g[tuple(c)])
                mask[(p, *i)] = True
    return out.reshape(len(starts), *shape), mask.reshape(len(starts), *shape)


CASES = [
    # tensor shape, tile shape, stack
    ((7, 9), (4, 4), 1),
    ((5, 3, 11), (4, 8), 1),
    ((2, 3, 6, 5), (4, 4), 1),
    ((2, 4, 10), (8,), 1),
    ((2, 4, 10, 3), (6, 3), 2),
    ((3, 4, 10), (6,), 2),
    ((0, 5), (4, 4), 1),
]


@pytest.mark.parametrize(("gshape", "shape", "stack"), CASES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_gather_matches_the_element_reference(gshape, shape, stack, dtype):
    rnd = random.Random(hash((gshape, shape, stack)) & 0xFFFF)
    g = torch.randn(gshape).to(dtype)
    n = 6
    full = _spanned(len(gshape), shape, stack)
    starts = [
        [rnd.randint(-n_ - 1, s + 1) for n_, s in zip(full, gshape, strict=True)] for _ in range(n)
    ]
    interp = _Interpreter((n, 1, 1), torch.device("cpu"))
    origins = [torch.tensor([s[d] for s in starts]) for d in range(len(gshape))]
    got, got_mask = interp.gather(g, origins, shape, stack)
    want, want_mask = _reference(g, starts, shape, stack)
    assert got.dtype == torch.float32
    assert torch.equal(got_mask, want_mask)
    assert torch.equal(got, want)

"""The reference of `tawac run`, `tawac tune` and the GPU tests is the user's program
interpreted on its own grid (the one its stores imply), not on the compiled kernel's: a
pass that changes the grid (group-heads: one program per group of heads; split-K,
widen) would otherwise leave most of the reference unwritten (NaN), and the comparison,
which reads only where the reference is finite, would check a fraction of the output."""

from __future__ import annotations

import math
from pathlib import Path

import torch

from tawac.analysis.args import kernel_arg_uses
from tawac.driver import compile_module, kernel_op, parse_file
from tawac.runtime.runner import make_args, reference, relative_error, unchecked

REPO = Path(__file__).resolve().parent.parent
DECODE = REPO / "examples" / "attention_decode.mlir"
SIZES = {"B": 2, "H": 16, "L": 3, "HK": 2, "S": 333, "D": 128, "scale_log2e": 0.127}


def _args():
    sidecar = compile_module(parse_file(DECODE)).sidecar  # grouped: (x, 16 / 8, B)
    op = kernel_op(DECODE)
    loads, stores = kernel_arg_uses(op)
    args = make_args(sidecar, SIZES, stores, loads, device="cpu")
    return op, [a.float() if isinstance(a, torch.Tensor) else a for a in args], stores


def test_the_reference_covers_every_head_of_a_grouped_kernel():
    op, args, stores = _args()
    reference(op, args)
    for i in stores:
        assert not bool(torch.isnan(args[i]).any()), "the reference left elements unwritten"


def test_an_output_where_the_reference_has_nothing_is_not_checked_silently():
    out = torch.tensor([1.0, 2.0, 3.0])
    ref = torch.tensor([1.0, math.nan, 3.0])
    assert relative_error(out, ref) == 0.0  # the norm reads the reference's elements only
    assert unchecked(out, ref) == 1  # and this counts what it skipped
    assert unchecked(ref, ref) == 0

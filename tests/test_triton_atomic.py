"""`tl.atomic_add` from Triton: an f32 add whose result is unused, masked by the tensor's
bounds as a store is, converts to `tile.atomic_add` (and compiles to `red.global.add`);
an add whose result is read, another atomic (`tl.atomic_xchg`) and an add of f16 stay
refused at their Python line, and so does a kernel whose adds meet from program ids
that place no dimension of the output (the conversion rebuilds only the output's). The
kernels are tests/triton_atomic_kernels.py, compiled with Triton's front end."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from tawac.compiler import compile_module, parse_text
from tawac.dialects import tile
from tawac.runtime.interpret import interpret_launch
from tawac.support.diagnostics import CompileError

TESTS = Path(__file__).resolve().parent
SOURCE = TESTS / "triton_atomic_kernels.py"
F32 = {"x_ptr": "*fp32", "y_ptr": "*fp32", "old_ptr": "*fp32", "n": "i32", "m": "i32"}


def _ttir(name: str, signature: dict[str, str], constexprs: dict) -> str:
    pytest.importorskip("triton")
    sys.path.insert(0, str(TESTS))
    import triton_atomic_kernels as kernels

    from tawac.triton import ttir_of

    fn = getattr(kernels, name)
    return ttir_of(fn, {k: signature[k] for k in fn.arg_names if k in signature}, constexprs)


def _line(function: str, text: str) -> int:
    lines = SOURCE.read_text().splitlines()
    start = next(i for i, s in enumerate(lines) if s.startswith(f"def {function}("))
    return next(i for i in range(start, len(lines)) if text in lines[i]) + 1


def _block_add():
    text = _ttir("block_add", F32, {"BLOCK_M": 64, "BLOCK_N": 128})
    return parse_text(text, "block_add.ttir")


def test_the_add_converts_to_a_tile_atomic_add():
    module = _block_add()
    adds = [o for o in module.walk() if isinstance(o, tile.AtomicAddOp)]
    assert len(adds) == 1
    assert str(adds[0].value.type) == "tensor<64x128xf32>"
    assert not any(isinstance(o, tile.StoreOp) for o in module.walk())


@pytest.mark.parametrize(("m", "n"), [(1, 1), (100, 200), (129, 257)])
def test_the_converted_add_matches_torch(m, n):
    kernel = next(o for o in _block_add().walk() if isinstance(o, tile.KernelOp))
    g = torch.Generator().manual_seed(m + n)
    x = torch.randn(m, n, generator=g)
    y = torch.randn(m, n, generator=g)
    want = y + x
    interpret_launch(kernel, [x, y])
    torch.testing.assert_close(y, want)


def test_the_converted_add_compiles_to_red_global_add():
    res = compile_module(_block_add(), cubin=False)
    assert res.ptx.count("red.global.add.v2.f32") == 32
    access = {a["name"]: a["access"] for a in res.sidecar["args"]}
    assert access == {"x": "read", "y": "readwrite"}


REFUSED = {
    # kernel: (signature, constexprs, the line's text, the message)
    "add_and_read": (F32, "tl.atomic_add(", "tl.atomic_add (tt.atomic_rmw): a tile program"),
    "exchange": (F32, "tl.atomic_xchg(", "tl.atomic_xchg (tt.atomic_rmw): a tile program"),
    "add_f16": (
        {"x_ptr": "*fp16", "y_ptr": "*fp16", "n": "i32"},
        "tl.atomic_add(",
        "tl.atomic_add (tt.atomic_rmw): a tile program",
    ),
    "slices_add": (F32, "x = tl.load(", "a block origin with the term pid_y tawac cannot"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_the_other_atomics_are_refused_at_their_python_line(name):
    signature, text, expected = REFUSED[name]
    with pytest.raises(CompileError) as info:
        parse_text(_ttir(name, signature, {"BLOCK": 1024}), "refused.ttir")
    message = str(info.value)
    assert f"triton_atomic_kernels.py:{_line(name, text)}:" in message, message
    assert expected in message, message

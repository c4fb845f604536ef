"""Grouped query heads (`group-heads`) and split keys (`split-k` of an attention loop) on
the CPU: the rewritten programs compute what the originals compute (the reference
interpreter against float32 torch, grouped and not), stacked tiles verify and round-trip,
the launch checks refuse another ratio of heads, `explain` says what was decided."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from tawac.compiler import parse_file, parse_text  # noqa: E402
from tawac.dialects import tile  # noqa: E402
from tawac.driver import compile_file  # noqa: E402
from tawac.passes.group_heads import group_kernel  # noqa: E402
from tawac.runtime.arguments import LaunchError, check_shapes  # noqa: E402
from tawac.runtime.interpret import interpret  # noqa: E402
from tawac.support.diagnostics import CompileError  # noqa: E402

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
DECODE = EXAMPLES / "attention_decode.mlir"


def _kernel(group: int = 8) -> tile.KernelOp:
    module = parse_file(DECODE, params={"GROUP": group})
    return next(o for o in module.walk() if isinstance(o, tile.KernelOp))


def _reference(q, k, v):
    g = q.shape[1] // k.shape[1]
    kk, vv = k.float().repeat_interleave(g, 1), v.float().repeat_interleave(g, 1)
    p = torch.softmax(q.float() @ kk.transpose(-1, -2) / math.sqrt(128), dim=-1)
    return p @ vv


@pytest.mark.parametrize("grouped", [False, True])
@pytest.mark.parametrize(
    ("b", "h", "hk", "rows", "keys"),
    [(2, 8, 1, 1, 300), (1, 16, 2, 5, 200), (1, 8, 1, 20, 129)],
)
def test_grouping_computes_what_the_program_says(grouped, b, h, hk, rows, keys):
    """One program per head (x: query blocks of 64 rows) and one per group (x: blocks of
    8 rows of each of the 8 heads) give the same attention; 20 rows span 3 stacked
    blocks, the last partly outside."""
    kern = _kernel()
    if grouped:
        assert group_kernel(kern)
    g = torch.Generator().manual_seed(rows * 10 + keys)
    q = torch.randn(b, h, rows, 128, generator=g).bfloat16()
    k = torch.randn(b, hk, keys, 128, generator=g).bfloat16()
    v = torch.randn(b, hk, keys, 128, generator=g).bfloat16()
    o = torch.full((b, h, rows, 128), float("nan")).bfloat16()
    per = 8 if grouped else 64
    grid = (math.ceil(rows / per), h // 8 if grouped else h, b)
    interpret(kern, [q, k, v, o, math.log2(math.e) / math.sqrt(128)], grid)
    assert (o.float() - _reference(q, k, v)).abs().max().item() < 1e-2


def test_grouping_records_its_decision_and_checks():
    r = compile_file(DECODE, cubin=False)
    assert r.sidecar["program_grid"][1] == {"cdiv": {"arg": "o", "dim": 1}, "by": 8}
    assert r.sidecar["program_grid"][0] == {"cdiv": {"arg": "o", "dim": 2}, "by": 8}
    assert {"arg": "q", "dim": 1, "equals": {"arg": "k", "dim": 1, "times": 8}} in (
        r.sidecar["checks"]
    )
    boxes = {p["arg"]: p["box"] for p in r.sidecar["params"] if p["kind"] == "tensor_map"}
    assert boxes["q"] == boxes["o"] == [64, 8, 8, 1]
    assert boxes["k"] == [64, 128, 1, 1]
    off = compile_file(DECODE, cubin=False, group_heads=False)
    assert "checks" not in off.sidecar
    assert off.sidecar["program_grid"][1] == {"cdiv": {"arg": "o", "dim": 1}, "by": 1}


def test_the_launch_refuses_another_ratio_of_heads():
    args = [
        {"name": "q", "kind": "tensor", "dims": ["B", "H", "L", "D"]},
        {"name": "k", "kind": "tensor", "dims": ["B", "HK", "S", "D"]},
    ]
    checks = [{"arg": "q", "dim": 1, "equals": {"arg": "k", "dim": 1, "times": 8}}]
    check_shapes(checks, {"q": (2, 32, 1, 128), "k": (2, 4, 99, 128)}, args)
    with pytest.raises(LaunchError, match=r"q.shape\[1\] \(H\) is 32, k.shape\[1\] \(HK\) is 2"):
        check_shapes(checks, {"q": (2, 32, 1, 128), "k": (2, 2, 99, 128)}, args)


def test_explain_says_grouped_and_split():
    from click.testing import CliRunner

    from tawac.tools import cli

    res = CliRunner().invoke(cli.main, ["explain", str(DECODE), "--split-k", "8"])
    assert res.exit_code == 0, res.output
    assert "query heads: grouped by 8" in res.output
    assert "split keys by 8 (flash-decoding)" in res.output


STACKED = """tile.kernel @k(%q: !tile.tensor<?x?x?x?xbf16>, %o: !tile.tensor<?x?x?x?xbf16>) {{
  %c0 = arith.constant 0 : index
  %t = tile.load %q[%c0, %c0, %c0, %c0] stack {load} : !tile.tensor<?x?x?x?xbf16> -> {tile}
  tile.store %t, %o[%c0, %c0, %c0, %c0] stack {store} : {tile} -> !tile.tensor<?x?x?x?xbf16>
  tile.return
}}"""


def test_stacked_tiles_round_trip():
    text = STACKED.format(load=8, store=4, tile="tensor<64x128xbf16>")
    printed = str(parse_text(text, "s.mlir"))
    assert "stack 8 : !tile.tensor" in printed and "stack 4 : tensor<64x128xbf16>" in printed


@pytest.mark.parametrize(
    ("load", "store", "tile_type", "message"),
    [
        (3, 8, "tensor<64x128xbf16>", "stack 3 must divide the tile's 64 rows"),
        (8, 8, "tensor<64xbf16>", "a stacked load reads a 2-d tile"),
    ],
)
def test_stacked_tiles_verify(load, store, tile_type, message):
    with pytest.raises(CompileError, match=message) as e:
        parse_text(STACKED.format(load=load, store=store, tile=tile_type), "s.mlir")
    assert "s.mlir:" in str(e.value)


def test_split_softmax_round_trips():
    text = """tile.kernel @k(%p: !tile.tensor<?x?x?x?x128xf32>, %m: !tile.tensor<?x?x?x?xf32>,
                      %l: !tile.tensor<?x?x?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %o, %mm, %ll = tile.split_softmax %p[%c0, %c0, %c0, %c0, %c0], %m, %l count %c4 max 4 exp2
    stack 8 : !tile.tensor<?x?x?x?x128xf32>, !tile.tensor<?x?x?x?xf32>,
    !tile.tensor<?x?x?x?xf32> -> tensor<64x128xf32>, tensor<64xf32>
  tile.return
}"""
    printed = str(parse_text(text, "s.mlir"))
    assert "count %c4 max 4 exp2 stack 8 : " in printed
    assert "-> tensor<64x128xf32>, tensor<64xf32>" in printed


def test_paged_decode_computes_what_the_program_says():
    """examples/attention_paged.mlir on the interpreter, grouped: each sequence's keys
    gathered from its pages (shuffled in a pool), its own length (a part page, one key)."""
    module = parse_file(EXAMPLES / "attention_paged.mlir")
    kern = next(o for o in module.walk() if isinstance(o, tile.KernelOp))
    assert group_kernel(kern)
    g = torch.Generator().manual_seed(3)
    lens = [300, 1, 129]
    pool = 7
    kc = torch.randn(pool, 2, 128, 128, generator=g).bfloat16()
    vc = torch.randn(pool, 2, 128, 128, generator=g).bfloat16()
    table = torch.tensor([[4, 0, 6], [2, -1, -1], [5, 1, -1]], dtype=torch.int32)
    q = torch.randn(3, 16, 2, 128, generator=g).bfloat16()
    o = torch.full((3, 16, 2, 128), float("nan")).bfloat16()
    seq = torch.tensor(lens, dtype=torch.int32)
    scale = math.log2(math.e) / math.sqrt(128)
    interpret(kern, [q, kc, vc, table, seq, o, scale], (1, 2, 3))
    for b, n in enumerate(lens):
        pages = table[b, : -(-n // 128)].long()
        k = kc[pages].permute(1, 0, 2, 3).reshape(2, -1, 128)[:, :n][None]
        v = vc[pages].permute(1, 0, 2, 3).reshape(2, -1, 128)[:, :n][None]
        assert (o[b : b + 1].float() - _reference(q[b : b + 1], k, v)).abs().max() < 1e-2

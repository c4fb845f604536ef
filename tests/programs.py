"""Tile programs the tests build from the examples: the same program written another
way than the example writes it."""

from __future__ import annotations

from pathlib import Path

EXAMPLES = Path(__file__).parents[1] / "examples"
#: The hand-guarded masks of the examples, and the same mask written directly in the key
#: loop (its splat `%limit` / row iota `%rows` still defined once before the loop).
_UNGUARD = {
    "attention.mlir": (
        """    %n_end = arith.addi %n, %bn : index
    %ragged = arith.cmpi sgt, %n_end, %S : index
    %s2 = scf.if %ragged -> (tensor<$BLOCK_Mx$BLOCK_Nxf32>) {
      %cols = tile.iota 1, %n : tensor<$BLOCK_Mx$BLOCK_Nxi32>
      %inside = tile.cmpi slt, %cols, %limit : tensor<$BLOCK_Mx$BLOCK_Nxi32>
      %masked = tile.select %inside, %s, %neg : {i1}, {f32}
      scf.yield %masked : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    } else {
      scf.yield %s : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    }
""",
        """    %cols = tile.iota 1, %n : tensor<$BLOCK_Mx$BLOCK_Nxi32>
    %inside = tile.cmpi slt, %cols, %limit : tensor<$BLOCK_Mx$BLOCK_Nxi32>
    %s2 = tile.select %inside, %s, %neg : {i1}, {f32}
""",
    ),
    "attention_causal.mlir": (
        """    %diag = arith.cmpi eq, %n, %m0 : index
    %s2 = scf.if %diag -> (tensor<128x128xf32>) {
      %cols = tile.iota 1, %n : tensor<128x128xi32>
      %keep = tile.cmpi sge, %rows, %cols : tensor<128x128xi32>
      %masked = tile.select %keep, %s, %neg : tensor<128x128xi1>, tensor<128x128xf32>
      scf.yield %masked : tensor<128x128xf32>
    } else {
      scf.yield %s : tensor<128x128xf32>
    }
""",
        """    %cols = tile.iota 1, %n : tensor<128x128xi32>
    %keep = tile.cmpi sge, %rows, %cols : tensor<128x128xi32>
    %s2 = tile.select %keep, %s, %neg : tensor<128x128xi1>, tensor<128x128xf32>
""",
    ),
}
_TILES = {"{i1}": "tensor<$BLOCK_Mx$BLOCK_Nxi1>", "{f32}": "tensor<$BLOCK_Mx$BLOCK_Nxf32>"}


def hoisted_mask(name: str) -> str:
    """examples/`name` with its mask's select taken out of its `scf.if`, directly in the
    key loop, while the splat `%limit` (attention.mlir) or the row iota `%rows`
    (attention_causal.mlir) stays defined once before the loop, as a user hoisting
    loop-invariant code writes it."""
    old, new = _UNGUARD[name]
    for k, v in _TILES.items():
        old, new = old.replace(k, v), new.replace(k, v)
    text = (EXAMPLES / name).read_text()
    assert text.count(old) == 1, name
    return text.replace(old, new)


#: A norm example's running sum, and the same add marked reassociable.
_ORDERED_SUM = "%acc_new = arith.addf %acc, %s : tensor<$BLOCK_Mxf32>"
_REASSOC_SUM = "%acc_new = arith.addf %acc, %s fastmath<reassoc> : tensor<$BLOCK_Mxf32>"


def ordered_sums(name: str) -> str:
    """The text of examples/`name` with the `fastmath<reassoc>` of its running sums
    taken off, so that `sink-reductions` keeps their order (each block reduced in the
    loop) (the norms: `rmsnorm.mlir`, `rmsnorm_residual.mlir`, `layernorm.mlir`)."""
    text = (EXAMPLES / name).read_text()
    assert _REASSOC_SUM in text, name
    return text.replace(_REASSOC_SUM, _ORDERED_SUM)

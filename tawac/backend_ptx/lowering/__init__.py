"""`convert-to-ptx`'s lowering, one module per kind of op.

- `state`: the lowering's state (`KernelLowering`), the lowered value kinds (`Frag`,
  `SmemTile`, `Ring`, `Bars`), the handler registry (`handles`) and shared helpers.
- `scalar`: scalar and elementwise `arith`/`math`, program and CTA ids, dimensions.
- `tiles`: splat, iota, tile compare/select, reductions, broadcasts, vector loads/stores.
- `splits`: `tile.split_sum`, the ordered sum of partial tiles other programs wrote.
- `control`: `scf.for` and `scf.if`.
- `sync`: shared memory, mbarriers, named barriers, ping-pong turns, TMA loads.
- `mma`: wgmma (shared and register A operands), descriptors, accumulators.
- `epilogue`: register fragments to swizzled shared memory, TMA stores.
- `atomics`: atomic adds of register tiles to global memory (`red.global.add`).

`tawac.backend_ptx.convert_to_ptx` imports them all, which registers every handler.
"""

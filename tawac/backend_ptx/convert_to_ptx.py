"""`convert-to-ptx`: the lowered tile kernel to the `ptx` dialect (one op per instruction).

Input: a `tile.kernel` after `lower-aref` (hopper resources at the top, then one
`aref.partition` per role holding scalar `arith`, `scf.for`/`scf.if`, `hopper` ops and the
epilogue's tile ops).  Output: a `ptx.module` with one `ptx.entry`, replacing the kernel.

Values become registers: index and i32 scalars one `b32` (s32 arithmetic), i1 a `pred`,
f32 an `f32`; a tile in a consumer partition becomes a `Frag`, its register list in the
layout chosen by `tawac.target.layouts`.  Structured control flow becomes labels and
branches; loop-carried registers are written with `ptx.assign`.

Kernel structure: thread 0 initialises the mbarriers, `bar.sync 0`, then each warp group
branches to its partition (warp group 0 the producer, the next ones the consumers), sets
its register budget with `setmaxnreg`, runs its code and exits.  The producer's code runs
on one thread; the consumers' on all their threads.

The launch ABI (kernel parameters, block, grid, shared memory) is recorded on the entry.

The lowering itself is the package `tawac.backend_ptx.lowering`, one module per kind of op.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import Float64Type, ModuleOp, TensorType
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.transforms.common_subexpression_elimination import cse
from xdsl.transforms.dead_code_elimination import region_dce

from tawac import schedule

# Imported for their side effect: each module registers its op handlers with `handles`.
from tawac.backend_ptx.lowering import (  # noqa: F401
    atomics,
    control,
    epilogue,
    mma,
    scalar,
    splits,
    sync,
    tiles,
    trace,
)
from tawac.backend_ptx.lowering.state import KernelLowering
from tawac.dialects import hopper, tile
from tawac.support.diagnostics import CompileError


@dataclass(frozen=True)
class ConvertToPtxPass(ModulePass):
    name = "convert-to-ptx"

    exp2_fma: int = 0
    """Every N-th exp2 of a tile on the FMA pipe (the knob `exp2_fma`); 0: none."""
    skip_rescale: bool = False
    """Skip a warp's rescale of a loop-carried tile by all-one factors (the knob)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not 0 <= self.exp2_fma <= 8:
            raise CompileError(f"convert-to-ptx: exp2-fma must be 0..8, got {self.exp2_fma}")
        cse(op)
        region_dce(op.body)
        for kern in [o for o in op.body.block.ops if isinstance(o, tile.KernelOp)]:
            _check_applied(kern)
            _check_register_types(kern)
            with _no_cyclic_gc():
                module = KernelLowering(
                    kern, exp2_fma=self.exp2_fma, skip_rescale=self.skip_rescale
                ).run()
            Rewriter.replace_op(kern, module)


@contextmanager
def _no_cyclic_gc():
    """Python's cyclic garbage collector off while a kernel is lowered.  The lowering
    allocates tens of thousands of ops, values and uses, all kept (they are the PTX
    module), and every few hundred allocations start a collection that finds nothing
    to free; the full ones walk the whole heap.  A collection after the lowering sees
    each new object once."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _check_register_types(kernel: tile.KernelOp) -> None:
    """Every tile value has an element type registers hold: not f64 (nothing lowers it),
    not fp8 (fp8 tiles exist only in shared memory, as wgmma operands: one left after
    `lower-aref` would be held in registers, and nothing lowers fp8 arithmetic, a
    register-A operand or a store of one)."""
    for op in kernel.walk():
        for r in op.results:
            t = r.type
            if not isinstance(t, TensorType):
                continue
            if isinstance(t.element_type, Float64Type):
                raise CompileError(
                    f"convert-to-ptx: {op.name} makes a {tile.type_str(t)} tile; f64 tiles are "
                    "not supported (compute in f32)",
                    op,
                )
            if isinstance(t.element_type, tile.FP8_TYPES):
                raise CompileError(
                    f"convert-to-ptx: {op.name} makes a {tile.type_str(t)} tile in registers; "
                    "fp8 tiles are supported only as tile.dot operands loaded from global "
                    "memory (fp8 results, arithmetic and stores are not supported yet: "
                    "compute in f32 and convert to bf16 or f16)",
                    op,
                )


def _check_applied(kernel: tile.KernelOp) -> None:
    """The launch follows the schedule: a persistent schedule needs the kernel that
    `persistent` made (a launch of one CTA per SM over a plain kernel computes a few
    tiles and leaves the rest unwritten)."""
    if not schedule.of(kernel).persistent:
        return
    if any(isinstance(o, hopper.NumCtasOp | hopper.NumClustersOp) for o in kernel.walk()):
        return
    raise CompileError(
        "convert-to-ptx: the schedule is persistent but the kernel was not made "
        "persistent; run the 'persistent' pass (or plan with persistent=false)",
        kernel,
    )

"""Locks: `tl.atomic_cas(Lock, 0, 1)` and `tl.atomic_xchg(Lock, 0)` of one `i32` element
-> `tile.atomic_cas` / `tile.atomic_xchg` (once per program, Triton's memory order; a
CTA-scope one at GPU scope, which orders more), the integer compares of what they and a
load of one `i32` element read (`count == 0`), and `tl.debug_barrier()` right before an
atomic, which the atomic's memory order already covers (every access of the program
before it happens before it). The spin `while tl.atomic_cas(Lock, 0, 1) == 1: pass` and
the `if` are `tawac.passes.convert_ttir.control`'s."""

from __future__ import annotations

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation

from tawac.dialects import tile, tt
from tawac.passes.convert_ttir.common import _error, _located
from tawac.passes.convert_ttir.dispatch import converts
from tawac.passes.convert_ttir.emitter import _Emitter
from tawac.passes.convert_ttir.memory import _indices
from tawac.passes.convert_ttir.tensors import scalar_atomic


def _order(op: tt.AtomicCasOp | tt.AtomicRmwOp) -> str:
    """The op's memory order (`sem`), checked against the tile dialect's."""
    words = [w.data for w in op.words.data]
    order = words[-2]
    if order not in tile.MEMORY_ORDERS:
        raise _error(f"an atomic of memory order {order}", op)
    return order


def _scalar(em: _Emitter, op: Operation) -> bool:
    return scalar_atomic(op)


@converts(tt.AtomicCasOp, when=_scalar)
def _atomic_cas(em: _Emitter, op: tt.AtomicCasOp) -> None:
    """`tl.atomic_cas(Lock, cmp, val)`: the tile kernel's compare-and-swap of the element."""
    a = em.plan.accesses[op]
    cmp, value = (em.scalar(v, op) for v in op.rest)
    new = tile.AtomicCasOp(_order(op), em.get(a.base, op), _indices(em, a), cmp, value)
    em.values[op.result] = em.add(_located(new, op)).results[0]


@converts(tt.AtomicRmwOp, when=_scalar)
def _atomic_xchg(em: _Emitter, op: tt.AtomicRmwOp) -> None:
    """`tl.atomic_xchg(Lock, val)`: the tile kernel's exchange of the element (its `true`
    mask masks nothing: `tawac.analysis.pointers.mask_of`)."""
    a = em.plan.accesses[op]
    value = em.scalar(op.rest[0], op)
    new = tile.AtomicXchgOp(_order(op), em.get(a.base, op), _indices(em, a), value)
    em.values[op.result] = em.add(_located(new, op)).results[0]


def _compared(em: _Emitter, op: tt.CmpiOp) -> bool:
    """An integer compare of scalars that a branch or a loop reads (`if count == 0`, the
    spin's `== 1`), or of a value read from memory."""
    if isinstance(op.lhs.type, TensorType):
        return False
    readers = (scf.IfOp, scf.ConditionOp)
    read = any(isinstance(u.operation, readers) for u in op.result.uses)
    return read or any(v in em.values for v in (op.lhs, op.rhs))


@converts(tt.CmpiOp, when=_compared)
def _cmpi(em: _Emitter, op: tt.CmpiOp) -> None:
    """The compare over index (signed, as Triton's i32 compare)."""
    lhs, rhs = (em.scalar(v, op) for v in (op.lhs, op.rhs))
    em.values[op.result] = em.add(arith.CmpiOp(lhs, rhs, op.predicate_name)).results[0]


@converts(tt.BarrierOp)
def _barrier(em: _Emitter, op: tt.BarrierOp) -> None:
    """`tl.debug_barrier()` right before a lock's atomic (which orders every access of
    the program before it, a release's purpose): nothing; elsewhere refused."""
    nxt = op.next_op
    if nxt is None or not scalar_atomic(nxt):
        raise _error(
            "tl.debug_barrier() (gpu.barrier) other than right before a lock's atomic: a "
            "tile program has no barrier (its threads are the compiler's)",
            op,
        )

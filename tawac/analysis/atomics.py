"""Which ops a program's scalar atomics order (`tile.atomic_cas`, `tile.atomic_xchg`: once
per program, with a memory order): a lock's critical section is every access after its
acquire in program order, and no pass may move a load of it before the acquire (the
producer's TMA would read a buffer before the program holds its lock)."""

from __future__ import annotations

from xdsl.dialects import scf
from xdsl.ir import Operation

from tawac.dialects import tile

#: The loops whose body runs again after its own later ops (an atomic there precedes
#: every op of the body from the second iteration on).
_LOOPS = (scf.ForOp, scf.WhileOp)


def scalar_atomics(kernel: tile.KernelOp) -> list[Operation]:
    """The kernel's scalar atomics, in program (walk) order."""
    return [o for o in kernel.walk() if isinstance(o, tile.SCALAR_ATOMICS)]


class AtomicOrder:
    """Program order between a kernel's ops and its scalar atomics: `after(op)` is the
    first scalar atomic that some execution of `op` follows (one earlier in the walk of
    the kernel, or one in a loop that also holds `op`: an earlier iteration's), or None."""

    def __init__(self, kernel: tile.KernelOp):
        self.position = {o: i for i, o in enumerate(kernel.walk())}
        self.atomics = scalar_atomics(kernel)

    def after(self, op: Operation) -> Operation | None:
        if not self.atomics:
            return None
        at = self.position[op]
        earlier = next((a for a in self.atomics if self.position[a] < at), None)
        if earlier is not None:
            return earlier
        loop = op.parent_op()
        while loop is not None and not isinstance(loop, tile.KernelOp):
            if isinstance(loop, _LOOPS):
                inside = next((a for a in self.atomics if loop.is_ancestor(a)), None)
                if inside is not None:
                    return inside
            loop = loop.parent_op()
        return None

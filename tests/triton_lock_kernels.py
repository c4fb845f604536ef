"""Triton kernels with locks that tawac refuses, each at its Python line
(tests/test_triton_locks.py compiles them with Triton's front end): a compare-and-swap of
a tile of pointers, a system-scope exchange, a spin that carries a value, a spin on a
plain load, a `tl.debug_barrier()` other than right before an atomic, and a lock in a
kernel of 2-d tiles (convert-ttir converts it; warp-specialize refuses it). Importing
this module needs triton."""

import triton
import triton.language as tl


@triton.jit
def cas_tile(x_ptr, y_ptr, lock_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(y_ptr + offs, x, mask=offs < n)
    tl.atomic_cas(lock_ptr + offs, offs * 0, offs * 0 + 1)


@triton.jit
def xchg_system(x_ptr, y_ptr, lock_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(y_ptr + offs, x, mask=offs < n)
    tl.atomic_xchg(lock_ptr, 0, scope="sys")


@triton.jit
def spin_counting(x_ptr, y_ptr, lock_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tries = 0
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        tries += 1
    tl.store(y_ptr + offs, x + tries, mask=offs < n)
    tl.atomic_xchg(lock_ptr, 0)


@triton.jit
def barrier_between(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(y_ptr + offs, x, mask=offs < n)
    tl.debug_barrier()
    again = tl.load(y_ptr + offs, mask=offs < n, other=0.0)
    tl.store(y_ptr + offs, again * 2.0, mask=offs < n)


@triton.jit
def locked_block(x_ptr, y_ptr, z_ptr, lock_ptr, m, n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """y = 2 x per 2-d block, and z's first block += x under one lock."""
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < m) & (cols[None, :] < n)
    x = tl.load(x_ptr + rows[:, None] * n + cols[None, :], mask=mask, other=0.0)
    tl.store(y_ptr + rows[:, None] * n + cols[None, :], x * 2.0, mask=mask)
    first = tl.arange(0, BLOCK_M)[:, None] * n + tl.arange(0, BLOCK_N)[None, :]
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    z = tl.load(z_ptr + first)
    tl.store(z_ptr + first, z + x)
    tl.atomic_xchg(lock_ptr, 0)


@triton.jit
def spin_on_load(x_ptr, y_ptr, lock_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    while tl.load(lock_ptr, volatile=True) == 1:
        pass
    tl.store(y_ptr + offs, x, mask=offs < n)

"""Triton kernels that add with `tl.atomic_add` (tests/test_triton_atomic.py converts them
with Triton's front end: the f32 adds whose result is unused become `tile.atomic_add`,
the others are refused at their Python line). Importing this module needs triton."""

import triton
import triton.language as tl


@triton.jit
def slices_add(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """y += 2 * (x[0] + x[1] + ...): program (i, s) adds block i of slice s."""
    pid = tl.program_id(0)
    s = tl.program_id(1)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + s * n + offs, mask=offs < n, other=0.0)
    tl.atomic_add(y_ptr + offs, x * 2.0, mask=offs < n)


@triton.jit
def block_add(x_ptr, y_ptr, m, n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """y += x, one 2-d block per program."""
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < m) & (cols[None, :] < n)
    offs = rows[:, None] * n + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.atomic_add(y_ptr + offs, x, mask=mask)


@triton.jit
def add_and_read(x_ptr, y_ptr, old_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    old = tl.atomic_add(y_ptr + offs, x, mask=offs < n)
    tl.store(old_ptr + offs, old, mask=offs < n)


@triton.jit
def exchange(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.atomic_xchg(y_ptr + offs, x, mask=offs < n)


@triton.jit
def add_f16(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.atomic_add(y_ptr + offs, x, mask=offs < n)

"""Triton kernels without `tt.dot` that `convert-ttir` refuses, each for one reason
(tests/test_triton_no_mma.py compiles them with Triton's front end and checks the
refusal's message and Python line). Importing this module needs triton."""

import triton
import triton.language as tl


@triton.jit
def rows_and_a_flag(x_ptr, y_ptr, flag_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    start = tl.program_id(0)
    for r in tl.range(start, n_rows, tl.num_programs(0)):
        cols = tl.arange(0, BLOCK)
        v = tl.load(x_ptr + r * n_cols + cols, mask=cols < n_cols)
        tl.store(y_ptr + r * n_cols + cols, v, mask=cols < n_cols)
    tl.store(flag_ptr + start, 1.0)  # once per program: outside the rows


@triton.jit
def rows_and_a_shared_row(x_ptr, y_ptr, last_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    for r in tl.range(tl.program_id(0), n_rows, tl.num_programs(0)):
        cols = tl.arange(0, BLOCK)
        v = tl.load(x_ptr + r * n_cols + cols, mask=cols < n_cols)
        tl.store(last_ptr + cols, v, mask=cols < n_cols)  # every row writes it
        tl.store(y_ptr + r * n_cols + cols, v, mask=cols < n_cols)


@triton.jit
def rows_reading_the_next_row(y_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    for r in tl.range(tl.program_id(0), n_rows, tl.num_programs(0)):
        cols = tl.arange(0, BLOCK)
        after = tl.load(y_ptr + (r + 1) * n_cols + cols, mask=cols < n_cols)
        tl.store(y_ptr + r * n_cols + cols, after * 2.0, mask=cols < n_cols)


@triton.jit
def rows_in_place(y_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    for r in tl.range(tl.program_id(0), n_rows, tl.num_programs(0)):
        cols = tl.arange(0, BLOCK)
        v = tl.load(y_ptr + r * n_cols + cols, mask=cols < n_cols)
        tl.store(y_ptr + r * n_cols + cols, v * 2.0, mask=cols < n_cols)


@triton.jit
def _times(a, b):
    return a * b


@triton.jit
def row_product(x_ptr, p_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=1.0)
    tl.store(p_ptr + row, tl.reduce(x, 0, _times))


@triton.jit
def row_sum_f16(x_ptr, s_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.store(s_ptr + row, tl.sum(x, axis=0).to(tl.float16))

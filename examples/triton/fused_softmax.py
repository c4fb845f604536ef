"""The kernel of Triton's tutorial `02-fused-softmax.py`, as Triton users write it: a row
softmax of a float32 matrix, each program looping over the rows `row_start, row_start +
num_programs, ...` (`tl.range` with software pipelining), each row one BLOCK_SIZE-element
block (the next power of two of the row length), its tail read as -inf.

`TTIR` says how `scripts/ttir_dump.py` compiles it to `fused_softmax.ttir` (rows of up to
1024 columns, the tutorial's `num_stages` for Hopper)."""

import triton
import triton.language as tl


@triton.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                   BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):  # fmt: skip
    # starting row of the program
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in tl.range(row_start, n_rows, row_step, num_stages=num_stages):
        # The stride represents how much we need to increase the pointer to advance 1 row
        row_start_ptr = input_ptr + row_idx * input_row_stride
        # The block size is the next power of two greater than n_cols, so we can fit each
        # row in a single block
        col_offsets = tl.arange(0, BLOCK_SIZE)
        input_ptrs = row_start_ptr + col_offsets
        # Load the row into SRAM, using a mask since BLOCK_SIZE may be > than n_cols
        mask = col_offsets < n_cols
        row = tl.load(input_ptrs, mask=mask, other=-float('inf'))  # fmt: skip
        # Subtract maximum for numerical stability
        row_minus_max = row - tl.max(row, axis=0)
        # Note that exponentiation in Triton is fast but approximate (i.e., think __expf in CUDA)
        numerator = tl.exp(row_minus_max)
        denominator = tl.sum(numerator, axis=0)
        softmax_output = numerator / denominator
        # Write back output to DRAM
        output_row_start_ptr = output_ptr + row_idx * output_row_stride
        output_ptrs = output_row_start_ptr + col_offsets
        tl.store(output_ptrs, softmax_output, mask=mask)


#: Rows of up to 1024 float32 columns; the tutorial's `num_stages` for Hopper (its
#: shared memory is large enough for 4).
TTIR = {
    "kernel": softmax_kernel,
    "signature": {
        "output_ptr": "*fp32", "input_ptr": "*fp32", "input_row_stride": "i32",
        "output_row_stride": "i32", "n_rows": "i32", "n_cols": "i32",
    },
    "constexprs": {"BLOCK_SIZE": 1024, "num_stages": 4},
}  # fmt: skip

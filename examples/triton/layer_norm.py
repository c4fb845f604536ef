"""The kernels of Triton's tutorial `05-layer-norm.py`, as Triton users write them: the fused
forward (one program per row, three loops over BLOCK_SIZE-column blocks: the mean, the
variance, then the normalized and scaled output; the row's mean and 1/std stored as
scalars), and the backward's two kernels: `_layer_norm_bwd_dx_fused` (one program per row:
dx, and the row's dw, db partial sums added into one of GROUP_SIZE_M buffers under a spin
lock, `tl.atomic_cas` / `tl.atomic_xchg`) and `_layer_norm_bwd_dwdb` (the column sums of
those buffers).

`TTIR` and `TTIR_VARIANTS` say how `scripts/ttir_dump.py` compiles them: the forward to
`layer_norm.ttir`, `_layer_norm_bwd_dwdb` to `layer_norm_bwd_dwdb.ttir`, and
`_layer_norm_bwd_dx_fused` to `layer_norm_bwd_dx_fused.ttir` (`DX_FUSED`: its lock is a
`tile.atomic_cas` in an `scf.while` and a `tile.atomic_xchg` once converted)."""

import triton
import triton.language as tl


@triton.jit
def _layer_norm_fwd_fused(
    X,  # pointer to the input
    Y,  # pointer to the output
    W,  # pointer to the weights
    B,  # pointer to the biases
    Mean,  # pointer to the mean
    Rstd,  # pointer to the 1/std
    stride,  # how much to increase the pointer when moving by 1 row
    N,  # number of columns in X
    eps,  # epsilon to avoid division by zero
    BLOCK_SIZE: tl.constexpr,
):
    # Map the program id to the row of X and Y it should compute.
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    # Compute mean
    mean = 0
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)  # fmt: skip
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    # Compute variance
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)  # fmt: skip
        x = tl.where(cols < N, x - mean, 0.)  # fmt: skip
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    # Write mean / rstd
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    # Normalize and apply linear transformation
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)  # fmt: skip
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        # Write output
        tl.store(Y + cols, y, mask=mask)


@triton.jit
def _layer_norm_bwd_dx_fused(DX,  # pointer to the input gradient
                             DY,  # pointer to the output gradient
                             DW,  # pointer to the partial sum of weights gradient
                             DB,  # pointer to the partial sum of biases gradient
                             X,  # pointer to the input
                             W,  # pointer to the weights
                             Mean,  # pointer to the mean
                             Rstd,  # pointer to the 1/std
                             Lock,  # pointer to the lock
                             stride,  # how much to increase the pointer when moving by 1 row
                             N,  # number of columns in X
                             GROUP_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr):  # fmt: skip
    # Map the program id to the elements of X, DX, and DY it should compute.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE_N)
    mask = cols < N
    X += row * stride
    DY += row * stride
    DX += row * stride
    # Offset locks and weights/biases gradient pointer for parallel reduction
    lock_id = row % GROUP_SIZE_M
    Lock += lock_id
    Count = Lock + GROUP_SIZE_M
    DW = DW + lock_id * N + cols
    DB = DB + lock_id * N + cols
    # Load data to SRAM
    x = tl.load(X + cols, mask=mask, other=0).to(tl.float32)
    dy = tl.load(DY + cols, mask=mask, other=0).to(tl.float32)
    w = tl.load(W + cols, mask=mask).to(tl.float32)
    mean = tl.load(Mean + row)
    rstd = tl.load(Rstd + row)
    # Compute dx
    xhat = (x - mean) * rstd
    wdy = w * dy
    xhat = tl.where(mask, xhat, 0.)  # fmt: skip
    wdy = tl.where(mask, wdy, 0.)  # fmt: skip
    c1 = tl.sum(xhat * wdy, axis=0) / N
    c2 = tl.sum(wdy, axis=0) / N
    dx = (wdy - (xhat * c1 + c2)) * rstd
    # Write dx
    tl.store(DX + cols, dx, mask=mask)
    # Accumulate partial sums for dw/db
    partial_dw = (dy * xhat).to(w.dtype)
    partial_db = (dy).to(w.dtype)
    while tl.atomic_cas(Lock, 0, 1) == 1:
        pass
    count = tl.load(Count)
    # First store doesn't accumulate
    if count == 0:
        tl.atomic_xchg(Count, 1)
    else:
        partial_dw += tl.load(DW, mask=mask)
        partial_db += tl.load(DB, mask=mask)
    tl.store(DW, partial_dw, mask=mask)
    tl.store(DB, partial_db, mask=mask)

    # need a barrier to ensure all threads finished before
    # releasing the lock
    tl.debug_barrier()

    # Release the lock
    tl.atomic_xchg(Lock, 0)


@triton.jit
def _layer_norm_bwd_dwdb(DW,  # pointer to the partial sum of weights gradient
                         DB,  # pointer to the partial sum of biases gradient
                         FINAL_DW,  # pointer to the weights gradient
                         FINAL_DB,  # pointer to the biases gradient
                         M,  # GROUP_SIZE_M
                         N,  # number of columns
                         BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr):  # fmt: skip
    # Map the program id to the elements of DW and DB it should compute.
    pid = tl.program_id(0)
    cols = pid * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    dw = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    db = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    # Iterate through the rows of DW and DB to sum the partial sums.
    for i in range(0, M, BLOCK_SIZE_M):
        rows = i + tl.arange(0, BLOCK_SIZE_M)
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        offs = rows[:, None] * N + cols[None, :]
        dw += tl.load(DW + offs, mask=mask, other=0.)  # fmt: skip
        db += tl.load(DB + offs, mask=mask, other=0.)  # fmt: skip
    # Write the final sum to the output.
    sum_dw = tl.sum(dw, axis=0)
    sum_db = tl.sum(db, axis=0)
    tl.store(FINAL_DW + cols, sum_dw, mask=cols < N)
    tl.store(FINAL_DB + cols, sum_db, mask=cols < N)


#: The tutorial's test dtype (float16 data, float32 mean and 1/std); 1024-column blocks,
#: so that a row longer than that takes several iterations of each loop.
TTIR = {
    "kernel": _layer_norm_fwd_fused,
    "signature": {
        "X": "*fp16", "Y": "*fp16", "W": "*fp16", "B": "*fp16", "Mean": "*fp32",
        "Rstd": "*fp32", "stride": "i32", "N": "i32", "eps": "fp32",
    },
    "constexprs": {"BLOCK_SIZE": 1024},
}  # fmt: skip

#: The backward's column sums, as the tutorial launches them (32 x 128 blocks).
DWDB = {
    "kernel": _layer_norm_bwd_dwdb,
    "signature": {
        "DW": "*fp16", "DB": "*fp16", "FINAL_DW": "*fp16", "FINAL_DB": "*fp16",
        "M": "i32", "N": "i32",
    },
    "constexprs": {"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 128},
}  # fmt: skip

#: The backward's dx with its locked partial sums (GROUP_SIZE_M 256 for rows of up to
#: 1024 columns, as the tutorial picks it): its lock converts to `tile.atomic_cas` in an
#: `scf.while` and `tile.atomic_xchg`.
DX_FUSED = {
    "kernel": _layer_norm_bwd_dx_fused,
    "signature": {
        "DX": "*fp16", "DY": "*fp16", "DW": "*fp16", "DB": "*fp16", "X": "*fp16",
        "W": "*fp16", "Mean": "*fp32", "Rstd": "*fp32", "Lock": "*i32", "stride": "i32",
        "N": "i32",
    },
    "constexprs": {"GROUP_SIZE_M": 256, "BLOCK_SIZE_N": 1024},
}  # fmt: skip

TTIR_VARIANTS = {"layer_norm_bwd_dwdb": DWDB, "layer_norm_bwd_dx_fused": DX_FUSED}

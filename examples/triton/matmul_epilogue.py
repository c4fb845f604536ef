"""The Triton tutorial's matrix multiplication with a fused epilogue: C = relu(A @ B +
bias) + R, the bias a row vector of N fp32 values broadcast over the rows, R an fp16
residual of C's shape; pointer style as the tutorial (grouped order, masks). `TTIR` says
how `scripts/ttir_dump.py` compiles it to `matmul_epilogue.ttir` (issue 21)."""

import triton
import triton.language as tl


@triton.jit
def matmul_epilogue_kernel(
    a_ptr, b_ptr, c_ptr, bias_ptr, r_ptr,
    M, N, K,
    stride_am, stride_ak,
    stride_bk, stride_bn,
    stride_cm, stride_cn,
    stride_rm, stride_rn,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr,
):  # fmt: skip
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)

    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    bias = tl.load(bias_ptr + offs_cn, mask=offs_cn < N, other=0.0)
    accumulator = tl.maximum(accumulator + bias[None, :], 0.0)
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    r_ptrs = r_ptr + stride_rm * offs_cm[:, None] + stride_rn * offs_cn[None, :]
    r = tl.load(r_ptrs, mask=c_mask, other=0.0)
    c = (accumulator + r.to(tl.float32)).to(tl.float16)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, c, mask=c_mask)


TTIR = {
    "kernel": matmul_epilogue_kernel,
    "signature": {
        "a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "bias_ptr": "*fp32", "r_ptr": "*fp16",
        "M": "i32", "N": "i32", "K": "i32",
        "stride_am": "i32", "stride_ak": "i32", "stride_bk": "i32", "stride_bn": "i32",
        "stride_cm": "i32", "stride_cn": "i32", "stride_rm": "i32", "stride_rn": "i32",
    },
    "constexprs": {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8},
}  # fmt: skip

"""GEMM kernels written the way Triton users write them, not copied from the tutorials:
`+=` accumulation with K masks recomputed per step, a bias
row read as `bias[None, :].to(tl.float32)` (the conversion after the expand) and SiLU;
a batched matmul on grid axis z with 3-d strides; a row-major program order
(`pid // num_n`) with B read through its strides as K x N, an f32 output and a runtime
scale. `TTIR` / `TTIR_VARIANTS` say how `scripts/ttir_dump.py` writes their `.ttir`."""

import triton
import triton.language as tl


@triton.jit
def mm_silu_bias(a_ptr, b_ptr, bias_ptr, c_ptr, M, N, K,
                 stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                 BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):  # fmt: skip
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * stride_am + (k + rk)[None, :] * stride_ak,
                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)  # fmt: skip
        b = tl.load(b_ptr + (k + rk)[:, None] * stride_bk + rn[None, :] * stride_bn,
                    mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)  # fmt: skip
        acc += tl.dot(a, b)
    bias = tl.load(bias_ptr + rn, mask=rn < N, other=0.0)
    acc = acc + bias[None, :].to(tl.float32)
    acc = acc * tl.sigmoid(acc)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc.to(tl.float16),
             mask=(rm[:, None] < M) & (rn[None, :] < N))  # fmt: skip


@triton.jit
def bmm(a_ptr, b_ptr, c_ptr, M, N, K,
        stride_ab, stride_am, stride_ak, stride_bb, stride_bk, stride_bn,
        stride_cb, stride_cm, stride_cn,
        BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):  # fmt: skip
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    pid_b = tl.program_id(2)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + pid_b * stride_ab + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + pid_b * stride_bb + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=rk[None, :] < K - k * BK, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] < K - k * BK, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK * stride_ak
        b_ptrs += BK * stride_bk
    c_ptrs = c_ptr + pid_b * stride_cb + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(tl.bfloat16), mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def mm_f32_scaled(a_ptr, b_ptr, c_ptr, M, N, K, alpha,
                  stride_am, stride_ak, stride_bn, stride_bk, stride_cm, stride_cn,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):  # fmt: skip
    pid = tl.program_id(0)
    num_n = tl.cdiv(N, BN)
    pid_m = pid // num_n
    pid_n = pid % num_n
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rn[None, :] * stride_bn + rk[:, None] * stride_bk
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=rk[None, :] < K - k * BK, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] < K - k * BK, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK * stride_ak
        b_ptrs += BK * stride_bk
    acc = acc * alpha
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))  # fmt: skip


@triton.jit
def mm_block_ptr_gelu(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                      stride_cm, stride_cn,
                      BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):  # fmt: skip
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    a_bp = tl.make_block_ptr(a_ptr, (M, K), (stride_am, stride_ak), (pid_m * BM, 0), (BM, BK),
                             (1, 0))  # fmt: skip
    b_bp = tl.make_block_ptr(b_ptr, (K, N), (stride_bk, stride_bn), (0, pid_n * BN), (BK, BN),
                             (1, 0))  # fmt: skip
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _k in tl.range(0, K, BK, num_stages=3):
        a = tl.load(a_bp, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(b_bp, boundary_check=(0, 1), padding_option="zero")
        acc = tl.dot(a, b, acc, out_dtype=tl.float32)
        a_bp = tl.advance(a_bp, (0, BK))
        b_bp = tl.advance(b_bp, (BK, 0))
    acc = 0.5 * acc * (1.0 + tl.math.erf(acc * 0.7071067811865476))
    c_bp = tl.make_block_ptr(c_ptr, (M, N), (stride_cm, stride_cn), (pid_m * BM, pid_n * BN),
                             (BM, BN), (1, 0))  # fmt: skip
    tl.store(c_bp, acc.to(c_ptr.dtype.element_ty), boundary_check=(0, 1))


@triton.jit
def mm_swizzle_residual(a_ptr, b_ptr, r_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk,
                        stride_bn, stride_cm, stride_cn,
                        BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):  # fmt: skip
    pid = tl.program_id(0)
    grid_m = tl.cdiv(M, BM)
    grid_n = tl.cdiv(N, BN)
    pid_m, pid_n = tl.swizzle2d(pid // grid_n, pid % grid_n, grid_m, grid_n, 8)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=rk[None, :] < K - k * BK, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] < K - k * BK, other=0.0)
        acc += tl.dot(a, b)
        a_ptrs += BK * stride_ak
        b_ptrs += BK * stride_bk
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    r = tl.load(r_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, mask=mask, other=0.0)
    acc = acc + r.to(tl.float32)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc.to(tl.float16),
             mask=mask)  # fmt: skip


@triton.jit
def softmax_rows(x_ptr, y_ptr, n_cols, stride_x, stride_y, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride_x + cols, mask=cols < n_cols, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    y = num / tl.sum(num, axis=0)
    tl.store(y_ptr + row * stride_y + cols, y, mask=cols < n_cols)


_T = {"BM": 128, "BN": 128, "BK": 64}
_I = "i32"


def _sig(ptrs: dict, ints: list[str], extra: dict | None = None) -> dict:
    return {**ptrs, **{n: _I for n in ints}, **(extra or {})}


_STRIDES = ["stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm", "stride_cn"]
TTIR = {
    "kernel": mm_silu_bias,
    "signature": _sig(
        {"a_ptr": "*fp16", "b_ptr": "*fp16", "bias_ptr": "*fp16", "c_ptr": "*fp16"},
        ["M", "N", "K", *_STRIDES],
    ),
    "constexprs": _T,
}
TTIR_VARIANTS = {
    "unseen_bmm": {
        "kernel": bmm,
        "signature": _sig(
            {"a_ptr": "*bf16", "b_ptr": "*bf16", "c_ptr": "*bf16"},
            [
                "M",
                "N",
                "K",
                "stride_ab",
                "stride_am",
                "stride_ak",
                "stride_bb",
                "stride_bk",
                "stride_bn",
                "stride_cb",
                "stride_cm",
                "stride_cn",
            ],  # fmt: skip
        ),
        "constexprs": _T,
    },
    "unseen_f32_scaled": {
        "kernel": mm_f32_scaled,
        "signature": {
            "a_ptr": "*bf16",
            "b_ptr": "*bf16",
            "c_ptr": "*fp32",
            "M": _I,
            "N": _I,
            "K": _I,
            "alpha": "fp32",
            "stride_am": _I,
            "stride_ak": _I,
            "stride_bn": _I,
            "stride_bk": _I,
            "stride_cm": _I,
            "stride_cn": _I,
        },  # fmt: skip
        "constexprs": _T,
    },
    # block pointers (Triton 3 lowers them to pointer tensors with `index >= 0` and
    # `index < size` masks) and exact GELU (`tl.math.erf`); unit strides specialized
    "unseen_block_ptr_gelu": {
        "kernel": mm_block_ptr_gelu,
        "signature": _sig(
            {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16"}, ["M", "N", "K", *_STRIDES]
        ),
        "constexprs": {**_T, "stride_ak": 1, "stride_bn": 1, "stride_cn": 1},
    },
    # a 1-d program id through tl.swizzle2d, a residual tile added in the epilogue
    "unseen_swizzle_residual": {
        "kernel": mm_swizzle_residual,
        "signature": _sig(
            {"a_ptr": "*fp16", "b_ptr": "*fp16", "r_ptr": "*fp16", "c_ptr": "*fp16"},
            ["M", "N", "K", *_STRIDES],
        ),
        "constexprs": {**_T, "stride_ak": 1, "stride_bn": 1, "stride_cn": 1},
    },
    # the tutorial's row softmax: a masked load filling with -inf, which tawac refuses
    # (tile.load fills with 0) at the Python line
    "unseen_softmax": {
        "kernel": softmax_rows,
        "signature": {
            "x_ptr": "*fp32",
            "y_ptr": "*fp32",
            "n_cols": _I,
            "stride_x": _I,
            "stride_y": _I,
        },
        "constexprs": {"BLOCK": 1024},
    },
}

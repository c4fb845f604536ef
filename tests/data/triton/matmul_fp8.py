"""An fp8 (e4m3) matmul through device-side tensor descriptors, C = A B^T with fp32
accumulation: f16 output (`TTIR`, converted and compiled) and fp8 output
(`TTIR_VARIANTS`: its `x.to(tl.float8e4nv)` is a `tt.fp_to_fp`, which tawac reads and
refuses at the backend with one located line: fp8 tiles only as MMA operands). Written
by `scripts/ttir_dump.py tests/data/triton/matmul_fp8.py`."""

import triton
import triton.language as tl


@triton.jit
def matmul_fp8(a_ptr, b_ptr, c_ptr, M, N, K,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):  # fmt: skip
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BN, BK])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for ki in range(tl.cdiv(K, BK)):
        a = a_desc.load([pid_m * BM, ki * BK])
        b = b_desc.load([pid_n * BN, ki * BK])
        acc = tl.dot(a, b.T, acc)
    c_desc.store([pid_m * BM, pid_n * BN], acc.to(c_ptr.dtype.element_ty))


_SIG = {"a_ptr": "*fp8e4nv", "b_ptr": "*fp8e4nv", "M": "i32", "N": "i32", "K": "i32"}
_CONSTS = {"BM": 128, "BN": 128, "BK": 128}

TTIR = {"kernel": matmul_fp8, "signature": {**_SIG, "c_ptr": "*fp16"}, "constexprs": _CONSTS}

TTIR_VARIANTS = {
    "matmul_fp8_out": {
        "kernel": matmul_fp8,
        "signature": {**_SIG, "c_ptr": "*fp8e4nv"},
        "constexprs": _CONSTS,
    },
}

"""A grouped-query decode attention whose key loop is bounded by an integer argument that
sizes no tensor (`n_blocks`: the cache holds at least `n_blocks * BLOCK_N` keys, read
unmasked), so the tile kernel keeps it as an `index` scalar: the launch sidecar's
`"key_split"` gives the loop's steps as `{"cdiv": {"scalar": "n_blocks"}, "by": 1}`
(tests/test_key_split.py). `scripts/ttir_dump.py` writes `key_bound_scalar.ttir`."""

import triton
import triton.language as tl


@triton.jit
def gqa_blocks_fwd(Q, K, V, Out, sm_scale, seqlen_q, n_blocks,
                   stride_qb, stride_qh, stride_qm, stride_kb, stride_kh, stride_kn,
                   stride_vb, stride_vh, stride_vn, stride_ob, stride_oh, stride_om,
                   G: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                   D: tl.constexpr):  # fmt: skip
    start_m = tl.program_id(0)
    off_h = tl.program_id(1)
    off_b = tl.program_id(2)
    off_kh = off_h // G
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    q = tl.load(Q + off_b * stride_qb + off_h * stride_qh + offs_m[:, None] * stride_qm
                + offs_d[None, :], mask=offs_m[:, None] < seqlen_q, other=0.0)  # fmt: skip
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    for start_n in range(0, n_blocks * BLOCK_N, BLOCK_N):
        cols = start_n + offs_n
        k = tl.load(K + off_b * stride_kb + off_kh * stride_kh + cols[:, None] * stride_kn
                    + offs_d[None, :])  # fmt: skip
        s = tl.dot(q, tl.trans(k)) * sm_scale
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + off_b * stride_vb + off_kh * stride_vh + cols[:, None] * stride_vn
                    + offs_d[None, :])  # fmt: skip
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.bfloat16), v)
        m_i = m_new
    acc = acc / l_i[:, None]
    tl.store(Out + off_b * stride_ob + off_h * stride_oh + offs_m[:, None] * stride_om
             + offs_d[None, :], acc.to(tl.bfloat16), mask=offs_m[:, None] < seqlen_q)  # fmt: skip


SIGNATURE = {
    "Q": "*bf16",
    "K": "*bf16",
    "V": "*bf16",
    "Out": "*bf16",
    "sm_scale": "fp32",
    "seqlen_q": "i32",
    "n_blocks": "i32",
    **dict.fromkeys(
        [f"stride_{t}{d}" for t, n in zip("qkvo", "mnnm", strict=True) for d in ("b", "h", n)],
        "i32",
    ),
}
TTIR = {
    "kernel": gqa_blocks_fwd,
    "signature": SIGNATURE,
    "constexprs": {"G": 8, "BLOCK_M": 64, "BLOCK_N": 128, "D": 128},
}

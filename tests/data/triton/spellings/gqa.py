"""A grouped-query attention (`tests/data/triton/unseen_attention.py::gqa_fwd`: H query
heads share HK = H / G key/value heads; Q, Out batch x H x seqlen_q x D, K, V batch x HK
x seqlen_k x D, bf16) spelled otherwise: the K/V head of a query head found another way.
`TTIR` writes `gqa.ttir` (`off_h * HK // H`); `TTIR_VARIANTS` the others
(`scripts/ttir_dump.py`). `tests/test_triton_spellings.py` checks each against torch."""

import triton
import triton.language as tl


@triton.jit
def gqa_scaled_head(Q, K, V, Out, sm_scale, seqlen_q, seqlen_k,
                    stride_qb, stride_qh, stride_qm, stride_kb, stride_kh, stride_kn,
                    stride_vb, stride_vh, stride_vn, stride_ob, stride_oh, stride_om,
                    H: tl.constexpr, HK: tl.constexpr, BLOCK_M: tl.constexpr,
                    BLOCK_N: tl.constexpr, D: tl.constexpr):  # fmt: skip
    # the K/V head as `off_h * HK // H` (the head counts constexprs, not the group size)
    start_m = tl.program_id(0)
    off_h = tl.program_id(1)
    off_b = tl.program_id(2)
    off_kh = off_h * HK // H
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    q = tl.load(Q + off_b * stride_qb + off_h * stride_qh + offs_m[:, None] * stride_qm
                + offs_d[None, :], mask=offs_m[:, None] < seqlen_q, other=0.0)  # fmt: skip
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    for start_n in range(0, seqlen_k, BLOCK_N):
        cols = start_n + offs_n
        k = tl.load(K + off_b * stride_kb + off_kh * stride_kh + cols[:, None] * stride_kn
                    + offs_d[None, :], mask=cols[:, None] < seqlen_k, other=0.0)  # fmt: skip
        s = tl.dot(q, tl.trans(k)) * sm_scale
        s = tl.where(cols[None, :] < seqlen_k, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + off_b * stride_vb + off_kh * stride_vh + cols[:, None] * stride_vn
                    + offs_d[None, :], mask=cols[:, None] < seqlen_k, other=0.0)  # fmt: skip
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.bfloat16), v)
        m_i = m_new
    acc = acc / l_i[:, None]
    tl.store(Out + off_b * stride_ob + off_h * stride_oh + offs_m[:, None] * stride_om
             + offs_d[None, :], acc.to(tl.bfloat16), mask=offs_m[:, None] < seqlen_q)  # fmt: skip


@triton.jit
def gqa_kv_head_grid(Q, K, V, Out, sm_scale, seqlen_q, seqlen_k,
                     stride_qb, stride_qh, stride_qm, stride_kb, stride_kh, stride_kn,
                     stride_vb, stride_vh, stride_vn, stride_ob, stride_oh, stride_om,
                     G: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     D: tl.constexpr):  # fmt: skip
    # a 3-d decomposition: grid axis y the K/V head, axis z the batch and the query head
    # in its group (`off_bg // G`, `off_bg % G`); the query head `off_kh * G + g`
    start_m = tl.program_id(0)
    off_kh = tl.program_id(1)
    off_bg = tl.program_id(2)
    off_b = off_bg // G
    off_h = off_kh * G + off_bg % G
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    q = tl.load(Q + off_b * stride_qb + off_h * stride_qh + offs_m[:, None] * stride_qm
                + offs_d[None, :], mask=offs_m[:, None] < seqlen_q, other=0.0)  # fmt: skip
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    for start_n in range(0, seqlen_k, BLOCK_N):
        cols = start_n + offs_n
        k = tl.load(K + off_b * stride_kb + off_kh * stride_kh + cols[:, None] * stride_kn
                    + offs_d[None, :], mask=cols[:, None] < seqlen_k, other=0.0)  # fmt: skip
        s = tl.dot(q, tl.trans(k)) * sm_scale
        s = tl.where(cols[None, :] < seqlen_k, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + off_b * stride_vb + off_kh * stride_vh + cols[:, None] * stride_vn
                    + offs_d[None, :], mask=cols[:, None] < seqlen_k, other=0.0)  # fmt: skip
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.bfloat16), v)
        m_i = m_new
    acc = acc / l_i[:, None]
    tl.store(Out + off_b * stride_ob + off_h * stride_oh + offs_m[:, None] * stride_om
             + offs_d[None, :], acc.to(tl.bfloat16), mask=offs_m[:, None] < seqlen_q)  # fmt: skip


@triton.jit
def gqa_flat_heads(Q, K, V, Out, sm_scale, seqlen_q, seqlen_k,
                   stride_qb, stride_qh, stride_qm, stride_kb, stride_kh, stride_kn,
                   stride_vb, stride_vh, stride_vn, stride_ob, stride_oh, stride_om,
                   H: tl.constexpr, G: tl.constexpr, BLOCK_M: tl.constexpr,
                   BLOCK_N: tl.constexpr, D: tl.constexpr):  # fmt: skip
    # batch and head flattened on grid axis y (`off_bh // H`, `off_bh % H`), exp2 of
    # the scores scaled by log2(e), K and V base pointers computed before the key loop
    start_m = tl.program_id(0)
    off_bh = tl.program_id(1)
    off_b = off_bh // H
    off_h = off_bh % H
    off_kh = off_h // G
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    q = tl.load(Q + off_b * stride_qb + off_h * stride_qh + offs_m[:, None] * stride_qm
                + offs_d[None, :], mask=offs_m[:, None] < seqlen_q, other=0.0)  # fmt: skip
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    qk_scale = sm_scale * 1.4426950408889634
    k_base = K + off_b * stride_kb + off_kh * stride_kh
    v_base = V + off_b * stride_vb + off_kh * stride_vh
    for start_n in range(0, seqlen_k, BLOCK_N):
        cols = start_n + offs_n
        k = tl.load(k_base + cols[:, None] * stride_kn + offs_d[None, :],
                    mask=cols[:, None] < seqlen_k, other=0.0)  # fmt: skip
        s = tl.dot(q, tl.trans(k)) * qk_scale
        s = tl.where(cols[None, :] < seqlen_k, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_base + cols[:, None] * stride_vn + offs_d[None, :],
                    mask=cols[:, None] < seqlen_k, other=0.0)  # fmt: skip
        acc = tl.dot(p.to(tl.bfloat16), v, acc * alpha[:, None])
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
    "seqlen_k": "i32",
    **dict.fromkeys(
        [f"stride_{t}{d}" for t, n in zip("qkvo", "mnnm", strict=True) for d in ("b", "h", n)],
        "i32",
    ),
}
_BLOCKS = {"BLOCK_M": 64, "BLOCK_N": 128, "D": 128}
TTIR = {
    "kernel": gqa_scaled_head,
    "signature": SIGNATURE,
    "constexprs": {"H": 32, "HK": 4, **_BLOCKS},
}
TTIR_VARIANTS = {
    "gqa_kv_head_grid": {
        "kernel": gqa_kv_head_grid,
        "signature": SIGNATURE,
        "constexprs": {"G": 8, **_BLOCKS},
    },
    "gqa_flat_heads": {
        "kernel": gqa_flat_heads,
        "signature": SIGNATURE,
        "constexprs": {"H": 32, "G": 8, **_BLOCKS},
    },
}

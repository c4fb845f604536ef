"""A FlashAttention forward written as users write it, not as the tutorial does (issue
21, "more in tests"): one program per (query block, batch x head) with the head count a
constexpr (`off_bh % H`), K read as D x BLOCK_N through its strides, every key block
masked against the sequence length with `tl.where(..., float("-inf"))`, the causal mask
joined with `&`, and the causal key loop ending at `tl.minimum((start_m + 1) * BLOCK_M,
seqlen)`. `TTIR` (not causal) and `TTIR_VARIANTS` (causal) say how
`scripts/ttir_dump.py` writes the `.ttir`; the head-dimension strides are 1, as
`tawac.triton.compile` (and Triton's JIT) specialize a unit stride. Also a grouped-query
attention (`gqa_fwd`: the K/V head `off_h // G`)."""

import triton
import triton.language as tl


@triton.jit
def flash_fwd(Q, K, V, Out, sm_scale, seqlen,
              stride_qb, stride_qh, stride_qm, stride_qd,
              stride_kb, stride_kh, stride_kn, stride_kd,
              stride_vb, stride_vh, stride_vn, stride_vd,
              stride_ob, stride_oh, stride_om, stride_od,
              H: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, D: tl.constexpr,
              CAUSAL: tl.constexpr):  # fmt: skip
    start_m = tl.program_id(0)
    off_bh = tl.program_id(1)
    off_b = off_bh // H
    off_h = off_bh % H
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    q_ptrs = (Q + off_b * stride_qb + off_h * stride_qh + offs_m[:, None] * stride_qm
              + offs_d[None, :] * stride_qd)  # fmt: skip
    q = tl.load(q_ptrs, mask=offs_m[:, None] < seqlen, other=0.0)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    hi = seqlen
    if CAUSAL:
        hi = tl.minimum((start_m + 1) * BLOCK_M, seqlen)
    for start_n in range(0, hi, BLOCK_N):
        offs_kv = start_n + offs_n
        k_ptrs = (K + off_b * stride_kb + off_h * stride_kh
                  + offs_kv[None, :] * stride_kn + offs_d[:, None] * stride_kd)  # fmt: skip
        k = tl.load(k_ptrs, mask=(start_n + offs_n)[None, :] < seqlen, other=0.0)
        qk = tl.dot(q, k)
        qk = qk * qk_scale
        mask = (start_n + offs_n)[None, :] < seqlen
        if CAUSAL:
            mask = mask & (offs_m[:, None] >= (start_n + offs_n)[None, :])
        qk = tl.where(mask, qk, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        l_ij = tl.sum(p, 1)
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + l_ij
        acc = acc * alpha[:, None]
        v_ptrs = (V + off_b * stride_vb + off_h * stride_vh
                  + offs_kv[:, None] * stride_vn + offs_d[None, :] * stride_vd)  # fmt: skip
        v = tl.load(v_ptrs, mask=(start_n + offs_n)[:, None] < seqlen, other=0.0)
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
    acc = acc / l_i[:, None]
    o_ptrs = (Out + off_b * stride_ob + off_h * stride_oh + offs_m[:, None] * stride_om
              + offs_d[None, :] * stride_od)  # fmt: skip
    tl.store(o_ptrs, acc.to(Out.dtype.element_ty), mask=offs_m[:, None] < seqlen)


@triton.jit
def gqa_fwd(Q, K, V, Out, sm_scale, seqlen_q, seqlen_k,
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


_ROWS = zip("qkvo", "mnnm", strict=True)
STRIDES = [f"stride_{t}{d}" for t, n in _ROWS for d in ("b", "h", n, "d")]
SIGNATURE = {
    "Q": "*bf16",
    "K": "*bf16",
    "V": "*bf16",
    "Out": "*bf16",
    "sm_scale": "fp32",
    "seqlen": "i32",
    **dict.fromkeys(STRIDES, "i32"),
}
UNIT = {s: 1 for s in STRIDES if s.endswith("d")}
_C = {"H": 4, "BLOCK_M": 128, "BLOCK_N": 128, "D": 128}
TTIR = {"kernel": flash_fwd, "signature": SIGNATURE, "constexprs": {**_C, "CAUSAL": False, **UNIT}}
TTIR_VARIANTS = {
    "unseen_attention_causal": {
        "kernel": flash_fwd,
        "signature": SIGNATURE,
        "constexprs": {**_C, "CAUSAL": True, **UNIT},
    }
}
GQA_SIGNATURE = {
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
# grouped-query attention as users write it: the K/V head `off_h // G` (G constexpr),
# `tl.trans(k)`, natural `tl.exp`; tawac groups the G query heads of a K/V head into
# one program (`group-heads`), as for its own decode example
TTIR_VARIANTS["unseen_gqa"] = {
    "kernel": gqa_fwd,
    "signature": GQA_SIGNATURE,
    "constexprs": {"G": 8, "BLOCK_M": 64, "BLOCK_N": 128, "D": 128},
}


@triton.jit
def gqa_causal_fwd(Q, K, V, Out, sm_scale, seqlen,
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
                + offs_d[None, :], mask=offs_m[:, None] < seqlen, other=0.0)  # fmt: skip
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    hi = tl.minimum((start_m + 1) * BLOCK_M, seqlen)
    for start_n in range(0, hi, BLOCK_N):
        cols = start_n + offs_n
        k = tl.load(K + off_b * stride_kb + off_kh * stride_kh + cols[:, None] * stride_kn
                    + offs_d[None, :], mask=cols[:, None] < seqlen, other=0.0)  # fmt: skip
        s = tl.dot(q, tl.trans(k)) * sm_scale
        keep = (cols[None, :] < seqlen) & (offs_m[:, None] >= cols[None, :])
        s = tl.where(keep, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + off_b * stride_vb + off_kh * stride_vh + cols[:, None] * stride_vn
                    + offs_d[None, :], mask=cols[:, None] < seqlen, other=0.0)  # fmt: skip
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.bfloat16), v)
        m_i = m_new
    acc = acc / l_i[:, None]
    tl.store(Out + off_b * stride_ob + off_h * stride_oh + offs_m[:, None] * stride_om
             + offs_d[None, :], acc.to(tl.bfloat16), mask=offs_m[:, None] < seqlen)  # fmt: skip


# the causal grouped-query attention (`gqa_causal_fwd`): the causal mask's row positions
# and the key loop's end follow the query block as one head's rows; grouped heads would
# stack other heads' rows there, so `group-heads` keeps one program per query head
TTIR_VARIANTS["unseen_gqa_causal"] = {
    "kernel": gqa_causal_fwd,
    "signature": {
        "Q": "*bf16",
        "K": "*bf16",
        "V": "*bf16",
        "Out": "*bf16",
        "sm_scale": "fp32",
        "seqlen": "i32",
        **{n: t for n, t in GQA_SIGNATURE.items() if n.startswith("stride_")},
    },
    "constexprs": {"G": 4, "BLOCK_M": 128, "BLOCK_N": 128, "D": 128},
}

"""A FlashAttention forward (`tests/data/triton/unseen_attention.py::flash_fwd`: Q, K, V,
Out of shape batch x heads x seqlen x D, bf16, masked against `seqlen`) spelled
otherwise, one or two changes per kernel, each with `CAUSAL` off and on. `TTIR` writes
`attention.ttir` (the key mask added as a `-inf` bias); `TTIR_VARIANTS` the others
(`<stem>` not causal, `<stem>_causal` causal; `scripts/ttir_dump.py`).
`tests/test_triton_spellings.py` checks each against torch."""

import triton
import triton.language as tl


@triton.jit
def attn_bias(Q, K, V, Out, sm_scale, seqlen,
              stride_qb, stride_qh, stride_qm, stride_qd,
              stride_kb, stride_kh, stride_kn, stride_kd,
              stride_vb, stride_vh, stride_vn, stride_vd,
              stride_ob, stride_oh, stride_om, stride_od,
              H: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, D: tl.constexpr,
              CAUSAL: tl.constexpr):  # fmt: skip
    # the masks as an additive bias of 0 / -inf; K loaded as BLOCK_N x D and transposed
    start_m = tl.program_id(0)
    off_bh = tl.program_id(1)
    off_b = off_bh // H
    off_h = off_bh % H
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    q = tl.load(Q + off_b * stride_qb + off_h * stride_qh + offs_m[:, None] * stride_qm
                + offs_d[None, :] * stride_qd,
                mask=offs_m[:, None] < seqlen, other=0.0)  # fmt: skip
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    hi = seqlen
    if CAUSAL:
        hi = tl.minimum((start_m + 1) * BLOCK_M, seqlen)
    for start_n in range(0, hi, BLOCK_N):
        cols = start_n + offs_n
        k = tl.load(K + off_b * stride_kb + off_h * stride_kh + cols[:, None] * stride_kn
                    + offs_d[None, :] * stride_kd,
                    mask=cols[:, None] < seqlen, other=0.0)  # fmt: skip
        qk = tl.dot(q, tl.trans(k)) * qk_scale
        qk += tl.where(cols[None, :] < seqlen, 0.0, float("-inf"))
        if CAUSAL:
            qk += tl.where(offs_m[:, None] >= cols[None, :], 0.0, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = tl.load(V + off_b * stride_vb + off_h * stride_vh + cols[:, None] * stride_vn
                    + offs_d[None, :] * stride_vd,
                    mask=cols[:, None] < seqlen, other=0.0)  # fmt: skip
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
    acc = acc / l_i[:, None]
    tl.store(Out + off_b * stride_ob + off_h * stride_oh + offs_m[:, None] * stride_om
             + offs_d[None, :] * stride_od, acc.to(Out.dtype.element_ty),
             mask=offs_m[:, None] < seqlen)  # fmt: skip


@triton.jit
def attn_grid_3d(Q, K, V, Out, sm_scale, seqlen,
                 stride_qb, stride_qh, stride_qm, stride_qd,
                 stride_kb, stride_kh, stride_kn, stride_kd,
                 stride_vb, stride_vh, stride_vn, stride_vd,
                 stride_ob, stride_oh, stride_om, stride_od,
                 H: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                 D: tl.constexpr, CAUSAL: tl.constexpr):  # fmt: skip
    # a 3-d grid (query block, head, batch); the mask with tl.where, the causal mask's
    # row offsets hoisted before the key loop; natural tl.exp of the scaled scores
    start_m = tl.program_id(0)
    off_h = tl.program_id(1)
    off_b = tl.program_id(2)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    rows = offs_m[:, None]
    q = tl.load(Q + off_b * stride_qb + off_h * stride_qh + rows * stride_qm
                + offs_d[None, :] * stride_qd, mask=rows < seqlen, other=0.0)  # fmt: skip
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    hi = seqlen
    if CAUSAL:
        hi = tl.minimum((start_m + 1) * BLOCK_M, seqlen)
    for start_n in range(0, hi, BLOCK_N):
        cols = (start_n + offs_n)[None, :]
        k = tl.load(K + off_b * stride_kb + off_h * stride_kh + cols * stride_kn
                    + offs_d[:, None] * stride_kd, mask=cols < seqlen, other=0.0)  # fmt: skip
        s = tl.dot(q, k) * sm_scale
        s = tl.where(cols < seqlen, s, float("-inf"))
        if CAUSAL:
            s = tl.where(rows >= cols, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + off_b * stride_vb + off_h * stride_vh
                    + (start_n + offs_n)[:, None] * stride_vn + offs_d[None, :] * stride_vd,
                    mask=(start_n + offs_n)[:, None] < seqlen, other=0.0)  # fmt: skip
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.bfloat16), v)
        m_i = m_new
    acc = acc / l_i[:, None]
    tl.store(Out + off_b * stride_ob + off_h * stride_oh + rows * stride_om
             + offs_d[None, :] * stride_od, acc.to(tl.bfloat16), mask=rows < seqlen)  # fmt: skip


@triton.jit
def attn_scale_in_exp2(Q, K, V, Out, sm_scale, seqlen,
                       stride_qb, stride_qh, stride_qm, stride_qd,
                       stride_kb, stride_kh, stride_kn, stride_kd,
                       stride_vb, stride_vh, stride_vn, stride_vd,
                       stride_ob, stride_oh, stride_om, stride_od,
                       H: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                       D: tl.constexpr, CAUSAL: tl.constexpr):  # fmt: skip
    # the scale folded into exp2's argument (the running max kept on the scaled scores,
    # as the tutorial does); the batch as `(off_bh - off_h) // H`; per-tensor base
    # pointers; `acc += tl.dot(...)`; the causal key loop's end without tl.minimum
    # (keys past seqlen are masked anyway)
    start_m = tl.program_id(0)
    off_bh = tl.program_id(1)
    off_h = off_bh % H
    off_b = (off_bh - off_h) // H
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    q_base = Q + off_b * stride_qb + off_h * stride_qh
    k_base = K + off_b * stride_kb + off_h * stride_kh
    v_base = V + off_b * stride_vb + off_h * stride_vh
    q = tl.load(q_base + offs_m[:, None] * stride_qm + offs_d[None, :] * stride_qd,
                mask=offs_m[:, None] < seqlen, other=0.0)  # fmt: skip
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    hi = seqlen
    if CAUSAL:
        hi = (start_m + 1) * BLOCK_M
    for start_n in range(0, hi, BLOCK_N):
        offs_kv = start_n + offs_n
        k = tl.load(k_base + offs_kv[None, :] * stride_kn + offs_d[:, None] * stride_kd,
                    mask=offs_kv[None, :] < seqlen, other=0.0)  # fmt: skip
        qk = tl.dot(q, k)
        mask = offs_kv[None, :] < seqlen
        if CAUSAL:
            mask = mask & (offs_m[:, None] >= offs_kv[None, :])
        qk = tl.where(mask, qk, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        p = tl.math.exp2(qk * qk_scale - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_base + offs_kv[:, None] * stride_vn + offs_d[None, :] * stride_vd,
                    mask=offs_kv[:, None] < seqlen, other=0.0)  # fmt: skip
        acc = acc * alpha[:, None]
        acc += tl.dot(p.to(tl.bfloat16), v)
        m_i = m_ij
    acc = acc / l_i[:, None]
    tl.store(Out + off_b * stride_ob + off_h * stride_oh + offs_m[:, None] * stride_om
             + offs_d[None, :] * stride_od, acc.to(tl.bfloat16),
             mask=offs_m[:, None] < seqlen)  # fmt: skip


@triton.jit
def attn_block_ptrs(Q, K, V, Out, sm_scale, seqlen,
                    stride_qb, stride_qh, stride_qm, stride_qd,
                    stride_kb, stride_kh, stride_kn, stride_kd,
                    stride_vb, stride_vh, stride_vn, stride_vd,
                    stride_ob, stride_oh, stride_om, stride_od,
                    H: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                    D: tl.constexpr, CAUSAL: tl.constexpr):  # fmt: skip
    # block pointers with boundary checks (K through a transposed block pointer), the
    # scores scaled before exp2, the key mask with tl.where
    start_m = tl.program_id(0)
    off_bh = tl.program_id(1)
    off_b = off_bh // H
    off_h = off_bh % H
    q_block = tl.make_block_ptr(Q + off_b * stride_qb + off_h * stride_qh,
                                shape=(seqlen, D), strides=(stride_qm, stride_qd),
                                offsets=(start_m * BLOCK_M, 0), block_shape=(BLOCK_M, D),
                                order=(1, 0))  # fmt: skip
    k_block = tl.make_block_ptr(K + off_b * stride_kb + off_h * stride_kh,
                                shape=(D, seqlen), strides=(stride_kd, stride_kn),
                                offsets=(0, 0), block_shape=(D, BLOCK_N), order=(0, 1))  # fmt: skip
    v_block = tl.make_block_ptr(V + off_b * stride_vb + off_h * stride_vh,
                                shape=(seqlen, D), strides=(stride_vn, stride_vd),
                                offsets=(0, 0), block_shape=(BLOCK_N, D), order=(1, 0))  # fmt: skip
    q = tl.load(q_block, boundary_check=(0,), padding_option="zero")
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    hi = seqlen
    if CAUSAL:
        hi = tl.minimum((start_m + 1) * BLOCK_M, seqlen)
    for start_n in range(0, hi, BLOCK_N):
        k = tl.load(k_block, boundary_check=(1,), padding_option="zero")
        qk = tl.dot(q, k) * qk_scale
        mask = (start_n + offs_n)[None, :] < seqlen
        if CAUSAL:
            mask = mask & (offs_m[:, None] >= (start_n + offs_n)[None, :])
        qk = tl.where(mask, qk, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_block, boundary_check=(0,), padding_option="zero")
        acc = tl.dot(p.to(tl.bfloat16), v, acc * alpha[:, None])
        m_i = m_ij
        k_block = tl.advance(k_block, (0, BLOCK_N))
        v_block = tl.advance(v_block, (BLOCK_N, 0))
    acc = acc / l_i[:, None]
    o_block = tl.make_block_ptr(Out + off_b * stride_ob + off_h * stride_oh,
                                shape=(seqlen, D), strides=(stride_om, stride_od),
                                offsets=(start_m * BLOCK_M, 0), block_shape=(BLOCK_M, D),
                                order=(1, 0))  # fmt: skip
    tl.store(o_block, acc.to(tl.bfloat16), boundary_check=(0,))


@triton.jit
def attn_pid_swapped(Q, K, V, Out, sm_scale, seqlen,
                     stride_qb, stride_qh, stride_qm, stride_qd,
                     stride_kb, stride_kh, stride_kn, stride_kd,
                     stride_vb, stride_vh, stride_vn, stride_vd,
                     stride_ob, stride_oh, stride_om, stride_od,
                     H: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     D: tl.constexpr, CAUSAL: tl.constexpr):  # fmt: skip
    # the heads on grid axis x and the query blocks on y; 1 / l_i as a reciprocal
    # product; the causal mask as its own tl.where after the length mask
    off_bh = tl.program_id(0)
    start_m = tl.program_id(1)
    off_b = off_bh // H
    off_h = off_bh % H
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    q = tl.load(Q + off_b * stride_qb + off_h * stride_qh + offs_m[:, None] * stride_qm
                + offs_d[None, :] * stride_qd,
                mask=offs_m[:, None] < seqlen, other=0.0)  # fmt: skip
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    hi = seqlen
    if CAUSAL:
        hi = tl.minimum((start_m + 1) * BLOCK_M, seqlen)
    for start_n in range(0, hi, BLOCK_N):
        k = tl.load(K + off_b * stride_kb + off_h * stride_kh
                    + (start_n + offs_n)[None, :] * stride_kn + offs_d[:, None] * stride_kd,
                    mask=(start_n + offs_n)[None, :] < seqlen, other=0.0)  # fmt: skip
        qk = tl.dot(q, k) * qk_scale
        qk = tl.where((start_n + offs_n)[None, :] < seqlen, qk, float("-inf"))
        if CAUSAL:
            qk = tl.where(offs_m[:, None] >= (start_n + offs_n)[None, :], qk, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + off_b * stride_vb + off_h * stride_vh
                    + (start_n + offs_n)[:, None] * stride_vn + offs_d[None, :] * stride_vd,
                    mask=(start_n + offs_n)[:, None] < seqlen, other=0.0)  # fmt: skip
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m_i = m_ij
    acc = acc * (1.0 / l_i)[:, None]
    tl.store(Out + off_b * stride_ob + off_h * stride_oh + offs_m[:, None] * stride_om
             + offs_d[None, :] * stride_od, acc.to(Out.dtype.element_ty),
             mask=offs_m[:, None] < seqlen)  # fmt: skip


@triton.jit
def attn_masks_otherwise(Q, K, V, Out, sm_scale, seqlen,
                         stride_qb, stride_qh, stride_qm, stride_qd,
                         stride_kb, stride_kh, stride_kn, stride_kd,
                         stride_vb, stride_vh, stride_vn, stride_vd,
                         stride_ob, stride_oh, stride_om, stride_od,
                         H: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                         D: tl.constexpr, CAUSAL: tl.constexpr):  # fmt: skip
    # the key mask with the condition inverted (`cols >= seqlen` selects -inf), the
    # causal one as a difference of positions (`rows - cols >= 0`); the key loop counts
    # blocks (`range(tl.cdiv(hi, BLOCK_N))`), its offset `j * BLOCK_N`
    start_m = tl.program_id(0)
    off_bh = tl.program_id(1)
    off_b = off_bh // H
    off_h = off_bh % H
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    q = tl.load(Q + off_b * stride_qb + off_h * stride_qh + offs_m[:, None] * stride_qm
                + offs_d[None, :] * stride_qd,
                mask=offs_m[:, None] < seqlen, other=0.0)  # fmt: skip
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    hi = seqlen
    if CAUSAL:
        hi = tl.minimum((start_m + 1) * BLOCK_M, seqlen)
    for j in range(0, tl.cdiv(hi, BLOCK_N)):
        cols = j * BLOCK_N + offs_n
        k = tl.load(K + off_b * stride_kb + off_h * stride_kh + cols[None, :] * stride_kn
                    + offs_d[:, None] * stride_kd,
                    mask=cols[None, :] < seqlen, other=0.0)  # fmt: skip
        qk = tl.dot(q, k) * qk_scale
        qk = tl.where(cols[None, :] >= seqlen, float("-inf"), qk)
        if CAUSAL:
            qk = tl.where(offs_m[:, None] - cols[None, :] >= 0, qk, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + off_b * stride_vb + off_h * stride_vh + cols[:, None] * stride_vn
                    + offs_d[None, :] * stride_vd,
                    mask=cols[:, None] < seqlen, other=0.0)  # fmt: skip
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m_i = m_ij
    acc = acc / l_i[:, None]
    tl.store(Out + off_b * stride_ob + off_h * stride_oh + offs_m[:, None] * stride_om
             + offs_d[None, :] * stride_od, acc.to(Out.dtype.element_ty),
             mask=offs_m[:, None] < seqlen)  # fmt: skip


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
_C = {"H": 4, "BLOCK_M": 128, "BLOCK_N": 128, "D": 128, **UNIT}


def _config(fn, causal: bool) -> dict:
    return {"kernel": fn, "signature": SIGNATURE, "constexprs": {**_C, "CAUSAL": causal}}


TTIR = _config(attn_bias, False)
TTIR_VARIANTS = {"attention_causal": _config(attn_bias, True)}
for _fn in (
    attn_grid_3d,
    attn_scale_in_exp2,
    attn_block_ptrs,
    attn_pid_swapped,
    attn_masks_otherwise,
):
    _stem = f"attention_{_fn.__name__[5:]}"
    TTIR_VARIANTS[_stem] = _config(_fn, False)
    TTIR_VARIANTS[f"{_stem}_causal"] = _config(_fn, True)

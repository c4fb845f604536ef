// Causal grouped-query attention (GQA), FlashAttention-2 forward: query i attends to
// keys j <= i, and K and V have fewer heads than Q. Q and O are [batch, H, seq, d], K and
// V [batch, HK, seq, d] (bf16); query head h reads key/value head h / GROUP (GROUP a
// constant: H = GROUP * HK). Program (x, y, z) = (query block, query head, batch). The
// key loop ends at the diagonal block, min(r0 + BLOCK_M, S), and the blocks that cross
// the diagonal or the end of the sequence are masked (the rows' positions from the query
// block's first row r0: `tile.iota 0, %r0`); any sequence length. The first row is
// computed twice, for the Q/O tiles (m0) and for the mask and the loop (r0), as a kernel
// converted from Triton computes it. The mask's row positions are one head's rows, so
// `group-heads` keeps one program per query head here (stacking GROUP heads' rows in one
// tile would give them the wrong positions). Otherwise as
// corpus/attention_gqa.mlir: base-2 online softmax (`scale_log2e` = scale * log2(e)).
// Parameters: GROUP query heads per K/V head, BLOCK_M queries and BLOCK_N keys per block,
// HEAD_DIM (64 or 128) the head dim d.
tile.kernel @attention_gqa_causal(%q: !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]>, %k: !tile.tensor<?x?x?x?xbf16, ["B", "HK", "S", "D"]>, %v: !tile.tensor<?x?x?x?xbf16, ["B", "HK", "S", "D"]>, %o: !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]>, %scale_log2e: f32) attributes {params = {GROUP = 4, BLOCK_M = 128, BLOCK_N = 128, HEAD_DIM = 128}} {
  %c0 = arith.constant 0 : index
  %bm = arith.constant $BLOCK_M : index
  %bn = arith.constant $BLOCK_N : index
  %pid_m = tile.program_id x
  %h = tile.program_id y
  %b = tile.program_id z
  %group = arith.constant $GROUP : index
  %hk = arith.divui %h, %group : index
  %m0 = arith.muli %pid_m, %bm : index
  %r0 = arith.muli %pid_m, %bm : index
  %S = tile.dim %k[2] : !tile.tensor<?x?x?x?xbf16, ["B", "HK", "S", "D"]>
  %diag_end = arith.addi %r0, %bm : index
  %kv_end = arith.minui %diag_end, %S : index
  %qt = tile.load %q[%b, %h, %m0, %c0] : !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]> -> tensor<$BLOCK_Mx$HEAD_DIMxbf16>
  %o_init = arith.constant dense<0.000000e+00> : tensor<$BLOCK_Mx$HEAD_DIMxf32>
  %m_init = arith.constant dense<-1.000000e+30> : tensor<$BLOCK_Mxf32>
  %l_init = arith.constant dense<0.000000e+00> : tensor<$BLOCK_Mxf32>
  %s_zero = arith.constant dense<0.000000e+00> : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %scale = tile.splat %scale_log2e : f32 -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %scale_v = tile.splat %scale_log2e : f32 -> tensor<$BLOCK_Mxf32>
  %neg = arith.constant dense<-1.000000e+30> : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %limit = tile.splat %S : index -> tensor<$BLOCK_Mx$BLOCK_Nxi32>
  %rows = tile.iota 0, %r0 : tensor<$BLOCK_Mx$BLOCK_Nxi32>
  %acc, %m_i, %l_i = scf.for %n = %c0 to %kv_end step %bn iter_args(%acc_j = %o_init, %m_j = %m_init, %l_j = %l_init) -> (tensor<$BLOCK_Mx$HEAD_DIMxf32>, tensor<$BLOCK_Mxf32>, tensor<$BLOCK_Mxf32>) {
    %kt = tile.load %k[%b, %hk, %n, %c0] : !tile.tensor<?x?x?x?xbf16, ["B", "HK", "S", "D"]> -> tensor<$BLOCK_Nx$HEAD_DIMxbf16>
    %vt = tile.load %v[%b, %hk, %n, %c0] : !tile.tensor<?x?x?x?xbf16, ["B", "HK", "S", "D"]> -> tensor<$BLOCK_Nx$HEAD_DIMxbf16>
    %s = tile.dot %qt, %kt, %s_zero transpose_rhs : tensor<$BLOCK_Mx$HEAD_DIMxbf16>, tensor<$BLOCK_Nx$HEAD_DIMxbf16> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %n_end = arith.addi %n, %bn : index
    %crosses = arith.cmpi sgt, %n_end, %r0 : index
    %ragged = arith.cmpi sgt, %n_end, %S : index
    %edge = arith.ori %crosses, %ragged : i1
    %s2 = scf.if %edge -> (tensor<$BLOCK_Mx$BLOCK_Nxf32>) {
      %cols = tile.iota 1, %n : tensor<$BLOCK_Mx$BLOCK_Nxi32>
      %past = tile.cmpi sge, %rows, %cols : tensor<$BLOCK_Mx$BLOCK_Nxi32>
      %causal = tile.select %past, %s, %neg : tensor<$BLOCK_Mx$BLOCK_Nxi1>, tensor<$BLOCK_Mx$BLOCK_Nxf32>
      %inside = tile.cmpi slt, %cols, %limit : tensor<$BLOCK_Mx$BLOCK_Nxi32>
      %masked = tile.select %inside, %causal, %neg : tensor<$BLOCK_Mx$BLOCK_Nxi1>, tensor<$BLOCK_Mx$BLOCK_Nxf32>
      scf.yield %masked : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    } else {
      scf.yield %s : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    }
    %raw_max = tile.reduce max %s2, 1 : tensor<$BLOCK_Mx$BLOCK_Nxf32> -> tensor<$BLOCK_Mxf32>
    %row_max = arith.mulf %raw_max, %scale_v : tensor<$BLOCK_Mxf32>
    %m_new = arith.maximumf %m_j, %row_max : tensor<$BLOCK_Mxf32>
    %m_b = tile.broadcast %m_new, 0 : tensor<$BLOCK_Mxf32> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %s_scaled = arith.mulf %s2, %scale : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %shifted = arith.subf %s_scaled, %m_b : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %p = math.exp2 %shifted : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %row_sum = tile.reduce sum %p, 1 : tensor<$BLOCK_Mx$BLOCK_Nxf32> -> tensor<$BLOCK_Mxf32>
    %dm = arith.subf %m_j, %m_new : tensor<$BLOCK_Mxf32>
    %alpha = math.exp2 %dm : tensor<$BLOCK_Mxf32>
    %l_scaled = arith.mulf %l_j, %alpha : tensor<$BLOCK_Mxf32>
    %l_new = arith.addf %l_scaled, %row_sum : tensor<$BLOCK_Mxf32>
    %alpha_b = tile.broadcast %alpha, 0 : tensor<$BLOCK_Mxf32> -> tensor<$BLOCK_Mx$HEAD_DIMxf32>
    %acc_scaled = arith.mulf %acc_j, %alpha_b : tensor<$BLOCK_Mx$HEAD_DIMxf32>
    %p16 = arith.truncf %p : tensor<$BLOCK_Mx$BLOCK_Nxf32> to tensor<$BLOCK_Mx$BLOCK_Nxbf16>
    %acc_new = tile.dot %p16, %vt, %acc_scaled : tensor<$BLOCK_Mx$BLOCK_Nxbf16>, tensor<$BLOCK_Nx$HEAD_DIMxbf16> -> tensor<$BLOCK_Mx$HEAD_DIMxf32>
    scf.yield %acc_new, %m_new, %l_new : tensor<$BLOCK_Mx$HEAD_DIMxf32>, tensor<$BLOCK_Mxf32>, tensor<$BLOCK_Mxf32>
  }
  %l_b = tile.broadcast %l_i, 0 : tensor<$BLOCK_Mxf32> -> tensor<$BLOCK_Mx$HEAD_DIMxf32>
  %out = arith.divf %acc, %l_b fastmath<arcp> : tensor<$BLOCK_Mx$HEAD_DIMxf32>
  %out16 = arith.truncf %out : tensor<$BLOCK_Mx$HEAD_DIMxf32> to tensor<$BLOCK_Mx$HEAD_DIMxbf16>
  tile.store %out16, %o[%b, %h, %m0, %c0] : tensor<$BLOCK_Mx$HEAD_DIMxbf16> -> !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]>
  tile.return
}

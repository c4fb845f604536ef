// Grouped-query attention forward that saves the log-sum-exp: as corpus/attention_gqa.mlir
// (K and V have HK heads, query head h reads head h / G, G = H / HK), and per query row
// lse = m + log2(l) in base 2 for the backward (examples/attention_bwd_dkdv_gqa.mlir,
// attention_bwd_dq_gqa.mlir). Q and O are [batch, H, seq, HEAD_DIM], K and V [batch, HK,
// seq, HEAD_DIM] bf16, lse is [batch, H, seq] f32; program (x, y, z) = (query block, query
// head, batch); any sequence length.
// Parameters: BLOCK_M queries and BLOCK_N keys per block, HEAD_DIM (64 or 128).
tile.kernel @attention_gqa_lse(%q: !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]>, %k: !tile.tensor<?x?x?x?xbf16, ["B", "HK", "S", "D"]>, %v: !tile.tensor<?x?x?x?xbf16, ["B", "HK", "S", "D"]>, %o: !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]>, %lse: !tile.tensor<?x?x?xf32, ["B", "H", "S"]>, %scale_log2e: f32) attributes {params = {BLOCK_M = 128, BLOCK_N = 128, HEAD_DIM = 128}} {
  %c0 = arith.constant 0 : index
  %bm = arith.constant $BLOCK_M : index
  %bn = arith.constant $BLOCK_N : index
  %pid_m = tile.program_id x
  %h = tile.program_id y
  %b = tile.program_id z
  %m0 = arith.muli %pid_m, %bm : index
  %S = tile.dim %k[2] : !tile.tensor<?x?x?x?xbf16, ["B", "HK", "S", "D"]>
  %H = tile.dim %q[1] : !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]>
  %HK = tile.dim %k[1] : !tile.tensor<?x?x?x?xbf16, ["B", "HK", "S", "D"]>
  %group = arith.divui %H, %HK : index
  %hk = arith.divui %h, %group : index
  %qt = tile.load %q[%b, %h, %m0, %c0] : !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]> -> tensor<$BLOCK_Mx$HEAD_DIMxbf16>
  %o_init = arith.constant dense<0.000000e+00> : tensor<$BLOCK_Mx$HEAD_DIMxf32>
  %m_init = arith.constant dense<-1.000000e+30> : tensor<$BLOCK_Mxf32>
  %l_init = arith.constant dense<0.000000e+00> : tensor<$BLOCK_Mxf32>
  %s_zero = arith.constant dense<0.000000e+00> : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %scale = tile.splat %scale_log2e : f32 -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %scale_v = tile.splat %scale_log2e : f32 -> tensor<$BLOCK_Mxf32>
  %neg = arith.constant dense<-1.000000e+30> : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %limit = tile.splat %S : index -> tensor<$BLOCK_Mx$BLOCK_Nxi32>
  %acc, %m_i, %l_i = scf.for %n = %c0 to %S step %bn iter_args(%acc_j = %o_init, %m_j = %m_init, %l_j = %l_init) -> (tensor<$BLOCK_Mx$HEAD_DIMxf32>, tensor<$BLOCK_Mxf32>, tensor<$BLOCK_Mxf32>) {
    %kt = tile.load %k[%b, %hk, %n, %c0] : !tile.tensor<?x?x?x?xbf16, ["B", "HK", "S", "D"]> -> tensor<$BLOCK_Nx$HEAD_DIMxbf16>
    %vt = tile.load %v[%b, %hk, %n, %c0] : !tile.tensor<?x?x?x?xbf16, ["B", "HK", "S", "D"]> -> tensor<$BLOCK_Nx$HEAD_DIMxbf16>
    %s = tile.dot %qt, %kt, %s_zero transpose_rhs : tensor<$BLOCK_Mx$HEAD_DIMxbf16>, tensor<$BLOCK_Nx$HEAD_DIMxbf16> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %n_end = arith.addi %n, %bn : index
    %ragged = arith.cmpi sgt, %n_end, %S : index
    %s2 = scf.if %ragged -> (tensor<$BLOCK_Mx$BLOCK_Nxf32>) {
      %cols = tile.iota 1, %n : tensor<$BLOCK_Mx$BLOCK_Nxi32>
      %inside = tile.cmpi slt, %cols, %limit : tensor<$BLOCK_Mx$BLOCK_Nxi32>
      %masked = tile.select %inside, %s, %neg : tensor<$BLOCK_Mx$BLOCK_Nxi1>, tensor<$BLOCK_Mx$BLOCK_Nxf32>
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
  %log_l = math.log2 %l_i : tensor<$BLOCK_Mxf32>
  %lse_t = arith.addf %m_i, %log_l : tensor<$BLOCK_Mxf32>
  tile.store %lse_t, %lse[%b, %h, %m0] : tensor<$BLOCK_Mxf32> -> !tile.tensor<?x?x?xf32, ["B", "H", "S"]>
  tile.return
}

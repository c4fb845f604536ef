// FlashAttention-2 forward with an additive score bias: O = softmax((Q K^T + Bias) * scale) V,
// Bias a bf16 SxS matrix shared by all heads and batches. The bias tile of each key block
// is a 2-d load read by consumer math inside the key loop: the producer brings it by TMA
// through an aref of its own (a ring as deep as K's and V's), the consumers read it into
// the layout of S and release it. Otherwise examples/attention.mlir (base-2 online
// softmax, masked ragged last key block, Q, K, V, O [batch, heads, seq, 128] bf16).
// Parameters: BLOCK_M queries and BLOCK_N keys per block (-D BLOCK_N=64: a 3-deep ring and
// the two-stage consumer loop).
tile.kernel @attention_bias(%q: !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]>, %k: !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]>, %v: !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]>, %o: !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]>, %bias: !tile.tensor<?x?xbf16, ["S", "S"]>, %scale_log2e: f32) attributes {params = {BLOCK_M = 128, BLOCK_N = 128}} {
  %c0 = arith.constant 0 : index
  %bm = arith.constant $BLOCK_M : index
  %bn = arith.constant $BLOCK_N : index
  %pid_m = tile.program_id x
  %h = tile.program_id y
  %b = tile.program_id z
  %m0 = arith.muli %pid_m, %bm : index
  %S = tile.dim %k[2] : !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]>
  %qt = tile.load %q[%b, %h, %m0, %c0] : !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]> -> tensor<$BLOCK_Mx128xbf16>
  %o_init = arith.constant dense<0.000000e+00> : tensor<$BLOCK_Mx128xf32>
  %m_init = arith.constant dense<-1.000000e+30> : tensor<$BLOCK_Mxf32>
  %l_init = arith.constant dense<0.000000e+00> : tensor<$BLOCK_Mxf32>
  %s_zero = arith.constant dense<0.000000e+00> : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %scale = tile.splat %scale_log2e : f32 -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %scale_v = tile.splat %scale_log2e : f32 -> tensor<$BLOCK_Mxf32>
  %neg = arith.constant dense<-1.000000e+30> : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %limit = tile.splat %S : index -> tensor<$BLOCK_Mx$BLOCK_Nxi32>
  %acc, %m_i, %l_i = scf.for %n = %c0 to %S step %bn iter_args(%acc_j = %o_init, %m_j = %m_init, %l_j = %l_init) -> (tensor<$BLOCK_Mx128xf32>, tensor<$BLOCK_Mxf32>, tensor<$BLOCK_Mxf32>) {
    %kt = tile.load %k[%b, %h, %n, %c0] : !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]> -> tensor<$BLOCK_Nx128xbf16>
    %vt = tile.load %v[%b, %h, %n, %c0] : !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]> -> tensor<$BLOCK_Nx128xbf16>
    %s = tile.dot %qt, %kt, %s_zero transpose_rhs : tensor<$BLOCK_Mx128xbf16>, tensor<$BLOCK_Nx128xbf16> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %bt = tile.load %bias[%m0, %n] : !tile.tensor<?x?xbf16, ["S", "S"]> -> tensor<$BLOCK_Mx$BLOCK_Nxbf16>
    %bf = arith.extf %bt : tensor<$BLOCK_Mx$BLOCK_Nxbf16> to tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %s_b = arith.addf %s, %bf : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %n_end = arith.addi %n, %bn : index
    %ragged = arith.cmpi sgt, %n_end, %S : index
    %s2 = scf.if %ragged -> (tensor<$BLOCK_Mx$BLOCK_Nxf32>) {
      %cols = tile.iota 1, %n : tensor<$BLOCK_Mx$BLOCK_Nxi32>
      %inside = tile.cmpi slt, %cols, %limit : tensor<$BLOCK_Mx$BLOCK_Nxi32>
      %masked = tile.select %inside, %s_b, %neg : tensor<$BLOCK_Mx$BLOCK_Nxi1>, tensor<$BLOCK_Mx$BLOCK_Nxf32>
      scf.yield %masked : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    } else {
      scf.yield %s_b : tensor<$BLOCK_Mx$BLOCK_Nxf32>
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
    %alpha_b = tile.broadcast %alpha, 0 : tensor<$BLOCK_Mxf32> -> tensor<$BLOCK_Mx128xf32>
    %acc_scaled = arith.mulf %acc_j, %alpha_b : tensor<$BLOCK_Mx128xf32>
    %p16 = arith.truncf %p : tensor<$BLOCK_Mx$BLOCK_Nxf32> to tensor<$BLOCK_Mx$BLOCK_Nxbf16>
    %acc_new = tile.dot %p16, %vt, %acc_scaled : tensor<$BLOCK_Mx$BLOCK_Nxbf16>, tensor<$BLOCK_Nx128xbf16> -> tensor<$BLOCK_Mx128xf32>
    scf.yield %acc_new, %m_new, %l_new : tensor<$BLOCK_Mx128xf32>, tensor<$BLOCK_Mxf32>, tensor<$BLOCK_Mxf32>
  }
  %l_b = tile.broadcast %l_i, 0 : tensor<$BLOCK_Mxf32> -> tensor<$BLOCK_Mx128xf32>
  %out = arith.divf %acc, %l_b fastmath<arcp> : tensor<$BLOCK_Mx128xf32>
  %out16 = arith.truncf %out : tensor<$BLOCK_Mx128xf32> to tensor<$BLOCK_Mx128xbf16>
  tile.store %out16, %o[%b, %h, %m0, %c0] : tensor<$BLOCK_Mx128xbf16> -> !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]>
  tile.return
}

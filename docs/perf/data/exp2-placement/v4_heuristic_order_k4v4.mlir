// FlashAttention-2 forward: O = softmax(Q K^T * scale) V with the online softmax.
// Q, K, V, O are [batch, heads, seq, 64] bf16; program (x, y, z) = (query block, head,
// batch). `scale_log2e` is the softmax scale times log2(e): the kernel works in base 2.
// Blocks of 192 queries and 128 keys: at head dim 64 the softmax costs as much as the
// MMAs, and 192 rows give three consumer warp groups (64 rows each) to overlap them.
// The row max is taken on the raw scores and then scaled (scale > 0), so that
// scores * scale - max is one fma per element.
// Any sequence length: the last key block masks the keys past the end (TMA reads them as
// zeros, which would otherwise get softmax weight); rows past the end are not stored.
// The final O / l may use 1/l (fastmath<arcp>): one reciprocal per row, not a division
// per element.
// Parameters: BLOCK_M queries and BLOCK_N keys per block.
tile.kernel @attention_d64(%q: !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]>, %k: !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]>, %v: !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]>, %o: !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]>, %scale_log2e: f32) attributes {params = {BLOCK_M = 192, BLOCK_N = 128}, tawac.schedule = #tawac.schedule<roles = [producer wg 1 regs 24, consumer wg 2 regs 240], arefs = [q: depth 2, k: depth 4, v: depth 4], loops = [consumer 0: [0 aref.get, 1 tile.dot, 16 tile.broadcast stage 1, 17 arith.mulf stage 1, 19 aref.get stage 1, 20 tile.dot stage 1, 2 aref.consumed, 3 scf.if, 4 tile.reduce, 5 arith.mulf, 6 arith.maximumf, 7 tile.broadcast, 8 arith.mulf, 9 arith.subf, 10 math.exp2, 11 tile.reduce, 12 arith.subf, 13 math.exp2, 14 arith.mulf, 15 arith.addf, 18 arith.truncf, 21 aref.consumed stage 1]], tiles = grouped 8, stores = [o: whole], program_grid = [{cdiv = {arg = "o", dim = 2 : i64}, by = 128 : i64}, {cdiv = {arg = "o", dim = 1 : i64}, by = 1 : i64}, {cdiv = {arg = "o", dim = 0 : i64}, by = 1 : i64}]>} {
  %c0 = arith.constant 0 : index
  %bn = arith.constant $BLOCK_N : index
  %bm = arith.constant $BLOCK_M : index
  %pid_m = tile.program_id x
  %h = tile.program_id y
  %b = tile.program_id z
  %m0 = arith.muli %pid_m, %bm : index
  %S = tile.dim %k[2] : !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]>
  %qt = tile.load %q[%b, %h, %m0, %c0] : !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]> -> tensor<$BLOCK_Mx64xbf16>
  %o_init = arith.constant dense<0.000000e+00> : tensor<$BLOCK_Mx64xf32>
  %m_init = arith.constant dense<-1.000000e+30> : tensor<$BLOCK_Mxf32>
  %l_init = arith.constant dense<0.000000e+00> : tensor<$BLOCK_Mxf32>
  %s_zero = arith.constant dense<0.000000e+00> : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %scale = tile.splat %scale_log2e : f32 -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %scale_v = tile.splat %scale_log2e : f32 -> tensor<$BLOCK_Mxf32>
  %neg = arith.constant dense<-1.000000e+30> : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %limit = tile.splat %S : index -> tensor<$BLOCK_Mx$BLOCK_Nxi32>
  %acc, %m_i, %l_i = scf.for %n = %c0 to %S step %bn iter_args(%acc_j = %o_init, %m_j = %m_init, %l_j = %l_init) -> (tensor<$BLOCK_Mx64xf32>, tensor<$BLOCK_Mxf32>, tensor<$BLOCK_Mxf32>) {
    %kt = tile.load %k[%b, %h, %n, %c0] : !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]> -> tensor<$BLOCK_Nx64xbf16>
    %vt = tile.load %v[%b, %h, %n, %c0] : !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]> -> tensor<$BLOCK_Nx64xbf16>
    %s = tile.dot %qt, %kt, %s_zero transpose_rhs : tensor<$BLOCK_Mx64xbf16>, tensor<$BLOCK_Nx64xbf16> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
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
    %alpha_b = tile.broadcast %alpha, 0 : tensor<$BLOCK_Mxf32> -> tensor<$BLOCK_Mx64xf32>
    %acc_scaled = arith.mulf %acc_j, %alpha_b : tensor<$BLOCK_Mx64xf32>
    %p16 = arith.truncf %p : tensor<$BLOCK_Mx$BLOCK_Nxf32> to tensor<$BLOCK_Mx$BLOCK_Nxbf16>
    %acc_new = tile.dot %p16, %vt, %acc_scaled : tensor<$BLOCK_Mx$BLOCK_Nxbf16>, tensor<$BLOCK_Nx64xbf16> -> tensor<$BLOCK_Mx64xf32>
    scf.yield %acc_new, %m_new, %l_new : tensor<$BLOCK_Mx64xf32>, tensor<$BLOCK_Mxf32>, tensor<$BLOCK_Mxf32>
  }
  %l_b = tile.broadcast %l_i, 0 : tensor<$BLOCK_Mxf32> -> tensor<$BLOCK_Mx64xf32>
  %out = arith.divf %acc, %l_b fastmath<arcp> : tensor<$BLOCK_Mx64xf32>
  %out16 = arith.truncf %out : tensor<$BLOCK_Mx64xf32> to tensor<$BLOCK_Mx64xbf16>
  tile.store %out16, %o[%b, %h, %m0, %c0] : tensor<$BLOCK_Mx64xbf16> -> !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]>
  tile.return
}

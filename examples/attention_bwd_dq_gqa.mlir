// Grouped-query attention backward, dQ: as examples/attention_bwd_dq.mlir, with K and V of
// HK heads (query head h reads head h / G, G = H / HK, from the tensors' dims).
// Q, dO, dQ are [batch, H, seq, HEAD_DIM], K and V [batch, HK, seq, HEAD_DIM] bf16; lse and
// delta are [batch, H, seq] f32; program (x, y, z) = (query block, query head, batch).
// Parameters: BLOCK_M queries per program, BLOCK_N keys per step, HEAD_DIM (64 or 128).
tile.kernel @attention_bwd_dq_gqa(%q: !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]>, %k: !tile.tensor<?x?x?x?xbf16, ["B", "HK", "S", "D"]>, %v: !tile.tensor<?x?x?x?xbf16, ["B", "HK", "S", "D"]>, %do: !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]>, %lse: !tile.tensor<?x?x?xf32, ["B", "H", "S"]>, %delta: !tile.tensor<?x?x?xf32, ["B", "H", "S"]>, %dq: !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]>, %scale_log2e: f32) attributes {params = {BLOCK_M = 128, BLOCK_N = 64, HEAD_DIM = 128}} {
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
  %dot = tile.load %do[%b, %h, %m0, %c0] : !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]> -> tensor<$BLOCK_Mx$HEAD_DIMxbf16>
  %lse_t = tile.load %lse[%b, %h, %m0] : !tile.tensor<?x?x?xf32, ["B", "H", "S"]> -> tensor<$BLOCK_Mxf32>
  %delta_t = tile.load %delta[%b, %h, %m0] : !tile.tensor<?x?x?xf32, ["B", "H", "S"]> -> tensor<$BLOCK_Mxf32>
  %zero = arith.constant dense<0.000000e+00> : tensor<$BLOCK_Mx$HEAD_DIMxf32>
  %s_zero = arith.constant dense<0.000000e+00> : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %scale = tile.splat %scale_log2e : f32 -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %lse_b = tile.broadcast %lse_t, 0 : tensor<$BLOCK_Mxf32> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %delta_b = tile.broadcast %delta_t, 0 : tensor<$BLOCK_Mxf32> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %dq_acc = scf.for %n = %c0 to %S step %bn iter_args(%dq_j = %zero) -> (tensor<$BLOCK_Mx$HEAD_DIMxf32>) {
    %kt = tile.load %k[%b, %hk, %n, %c0] : !tile.tensor<?x?x?x?xbf16, ["B", "HK", "S", "D"]> -> tensor<$BLOCK_Nx$HEAD_DIMxbf16>
    %vt = tile.load %v[%b, %hk, %n, %c0] : !tile.tensor<?x?x?x?xbf16, ["B", "HK", "S", "D"]> -> tensor<$BLOCK_Nx$HEAD_DIMxbf16>
    %s = tile.dot %qt, %kt, %s_zero transpose_rhs : tensor<$BLOCK_Mx$HEAD_DIMxbf16>, tensor<$BLOCK_Nx$HEAD_DIMxbf16> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %s_scaled = arith.mulf %s, %scale : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %shifted = arith.subf %s_scaled, %lse_b : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %p = math.exp2 %shifted : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %dp = tile.dot %dot, %vt, %s_zero transpose_rhs : tensor<$BLOCK_Mx$HEAD_DIMxbf16>, tensor<$BLOCK_Nx$HEAD_DIMxbf16> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %diff = arith.subf %dp, %delta_b : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %ds = arith.mulf %p, %diff : tensor<$BLOCK_Mx$BLOCK_Nxf32>
    %ds16 = arith.truncf %ds : tensor<$BLOCK_Mx$BLOCK_Nxf32> to tensor<$BLOCK_Mx$BLOCK_Nxbf16>
    %dq_new = tile.dot %ds16, %kt, %dq_j : tensor<$BLOCK_Mx$BLOCK_Nxbf16>, tensor<$BLOCK_Nx$HEAD_DIMxbf16> -> tensor<$BLOCK_Mx$HEAD_DIMxf32>
    scf.yield %dq_new : tensor<$BLOCK_Mx$HEAD_DIMxf32>
  }
  %ln2 = arith.constant 0.693147182 : f32
  %sm = arith.mulf %scale_log2e, %ln2 : f32
  %sm_b = tile.splat %sm : f32 -> tensor<$BLOCK_Mx$HEAD_DIMxf32>
  %dq_f = arith.mulf %dq_acc, %sm_b : tensor<$BLOCK_Mx$HEAD_DIMxf32>
  %dq16 = arith.truncf %dq_f : tensor<$BLOCK_Mx$HEAD_DIMxf32> to tensor<$BLOCK_Mx$HEAD_DIMxbf16>
  tile.store %dq16, %dq[%b, %h, %m0, %c0] : tensor<$BLOCK_Mx$HEAD_DIMxbf16> -> !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]>
  tile.return
}

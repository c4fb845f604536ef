// Grouped-query attention backward, dK and dV: as examples/attention_bwd_dkdv.mlir, for K
// and V of HK heads shared by the G = H / HK query heads of a group. One program per key
// block and key/value head sums over the group's query heads in its one loop: step t is
// query block t mod cdiv(S, BLOCK_M) of query head hk G + t / cdiv(S, BLOCK_M), so dK and
// dV add up the whole group in one order (deterministic, no atomics).
// Q, dO are [batch, H, seq, HEAD_DIM], K, V, dK, dV [batch, HK, seq, HEAD_DIM] bf16; lse
// and delta are [batch, H, seq] f32; program (x, y, z) = (key block, key/value head, batch).
// Parameters: BLOCK_N keys per program, BLOCK_M queries per step (32 at HEAD_DIM 128, 64
// at 64, as examples/attention_bwd_dkdv.mlir), HEAD_DIM (64 or 128).
tile.kernel @attention_bwd_dkdv_gqa(%q: !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]>, %k: !tile.tensor<?x?x?x?xbf16, ["B", "HK", "S", "D"]>, %v: !tile.tensor<?x?x?x?xbf16, ["B", "HK", "S", "D"]>, %do: !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]>, %lse: !tile.tensor<?x?x?xf32, ["B", "H", "S"]>, %delta: !tile.tensor<?x?x?xf32, ["B", "H", "S"]>, %dk: !tile.tensor<?x?x?x?xbf16, ["B", "HK", "S", "D"]>, %dv: !tile.tensor<?x?x?x?xbf16, ["B", "HK", "S", "D"]>, %scale_log2e: f32) attributes {params = {BLOCK_M = 32, BLOCK_N = 128, HEAD_DIM = 128}} {
  %c0 = arith.constant 0 : index
  %bm = arith.constant $BLOCK_M : index
  %bn = arith.constant $BLOCK_N : index
  %pid_n = tile.program_id x
  %hk = tile.program_id y
  %b = tile.program_id z
  %n0 = arith.muli %pid_n, %bn : index
  %S = tile.dim %q[2] : !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]>
  %H = tile.dim %q[1] : !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]>
  %HK = tile.dim %k[1] : !tile.tensor<?x?x?x?xbf16, ["B", "HK", "S", "D"]>
  %group = arith.divui %H, %HK : index
  %c1 = arith.constant 1 : index
  %bm1 = arith.subi %bm, %c1 : index
  %S_up = arith.addi %S, %bm1 : index
  %blocks = arith.divui %S_up, %bm : index
  %steps = arith.muli %group, %blocks : index
  %h0 = arith.muli %hk, %group : index
  %kt = tile.load %k[%b, %hk, %n0, %c0] : !tile.tensor<?x?x?x?xbf16, ["B", "HK", "S", "D"]> -> tensor<$BLOCK_Nx$HEAD_DIMxbf16>
  %vt = tile.load %v[%b, %hk, %n0, %c0] : !tile.tensor<?x?x?x?xbf16, ["B", "HK", "S", "D"]> -> tensor<$BLOCK_Nx$HEAD_DIMxbf16>
  %zero = arith.constant dense<0.000000e+00> : tensor<$BLOCK_Nx$HEAD_DIMxf32>
  %s_zero = arith.constant dense<0.000000e+00> : tensor<$BLOCK_Nx$BLOCK_Mxf32>
  %scale = tile.splat %scale_log2e : f32 -> tensor<$BLOCK_Nx$BLOCK_Mxf32>
  %dk_acc, %dv_acc = scf.for %t = %c0 to %steps step %c1 iter_args(%dk_j = %zero, %dv_j = %zero) -> (tensor<$BLOCK_Nx$HEAD_DIMxf32>, tensor<$BLOCK_Nx$HEAD_DIMxf32>) {
    %g = arith.divui %t, %blocks : index
    %h = arith.addi %h0, %g : index
    %gb = arith.muli %g, %blocks : index
    %j = arith.subi %t, %gb : index
    %m = arith.muli %j, %bm : index
    %qt = tile.load %q[%b, %h, %m, %c0] : !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]> -> tensor<$BLOCK_Mx$HEAD_DIMxbf16>
    %dot = tile.load %do[%b, %h, %m, %c0] : !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]> -> tensor<$BLOCK_Mx$HEAD_DIMxbf16>
    %lse_t = tile.load %lse[%b, %h, %m] : !tile.tensor<?x?x?xf32, ["B", "H", "S"]> -> tensor<$BLOCK_Mxf32>
    %delta_t = tile.load %delta[%b, %h, %m] : !tile.tensor<?x?x?xf32, ["B", "H", "S"]> -> tensor<$BLOCK_Mxf32>
    %st = tile.dot %kt, %qt, %s_zero transpose_rhs : tensor<$BLOCK_Nx$HEAD_DIMxbf16>, tensor<$BLOCK_Mx$HEAD_DIMxbf16> -> tensor<$BLOCK_Nx$BLOCK_Mxf32>
    %lse_b = tile.broadcast %lse_t, 1 : tensor<$BLOCK_Mxf32> -> tensor<$BLOCK_Nx$BLOCK_Mxf32>
    %st_scaled = arith.mulf %st, %scale : tensor<$BLOCK_Nx$BLOCK_Mxf32>
    %shifted = arith.subf %st_scaled, %lse_b : tensor<$BLOCK_Nx$BLOCK_Mxf32>
    %pt = math.exp2 %shifted : tensor<$BLOCK_Nx$BLOCK_Mxf32>
    %pt16 = arith.truncf %pt : tensor<$BLOCK_Nx$BLOCK_Mxf32> to tensor<$BLOCK_Nx$BLOCK_Mxbf16>
    %dv_new = tile.dot %pt16, %dot, %dv_j : tensor<$BLOCK_Nx$BLOCK_Mxbf16>, tensor<$BLOCK_Mx$HEAD_DIMxbf16> -> tensor<$BLOCK_Nx$HEAD_DIMxf32>
    %dpt = tile.dot %vt, %dot, %s_zero transpose_rhs : tensor<$BLOCK_Nx$HEAD_DIMxbf16>, tensor<$BLOCK_Mx$HEAD_DIMxbf16> -> tensor<$BLOCK_Nx$BLOCK_Mxf32>
    %delta_b = tile.broadcast %delta_t, 1 : tensor<$BLOCK_Mxf32> -> tensor<$BLOCK_Nx$BLOCK_Mxf32>
    %diff = arith.subf %dpt, %delta_b : tensor<$BLOCK_Nx$BLOCK_Mxf32>
    %dst = arith.mulf %pt, %diff : tensor<$BLOCK_Nx$BLOCK_Mxf32>
    %dst16 = arith.truncf %dst : tensor<$BLOCK_Nx$BLOCK_Mxf32> to tensor<$BLOCK_Nx$BLOCK_Mxbf16>
    %dk_new = tile.dot %dst16, %qt, %dk_j : tensor<$BLOCK_Nx$BLOCK_Mxbf16>, tensor<$BLOCK_Mx$HEAD_DIMxbf16> -> tensor<$BLOCK_Nx$HEAD_DIMxf32>
    scf.yield %dk_new, %dv_new : tensor<$BLOCK_Nx$HEAD_DIMxf32>, tensor<$BLOCK_Nx$HEAD_DIMxf32>
  }
  %ln2 = arith.constant 0.693147182 : f32
  %sm = arith.mulf %scale_log2e, %ln2 : f32
  %sm_b = tile.splat %sm : f32 -> tensor<$BLOCK_Nx$HEAD_DIMxf32>
  %dk_f = arith.mulf %dk_acc, %sm_b : tensor<$BLOCK_Nx$HEAD_DIMxf32>
  %dk16 = arith.truncf %dk_f : tensor<$BLOCK_Nx$HEAD_DIMxf32> to tensor<$BLOCK_Nx$HEAD_DIMxbf16>
  %dv16 = arith.truncf %dv_acc : tensor<$BLOCK_Nx$HEAD_DIMxf32> to tensor<$BLOCK_Nx$HEAD_DIMxbf16>
  tile.store %dk16, %dk[%b, %hk, %n0, %c0] : tensor<$BLOCK_Nx$HEAD_DIMxbf16> -> !tile.tensor<?x?x?x?xbf16, ["B", "HK", "S", "D"]>
  tile.store %dv16, %dv[%b, %hk, %n0, %c0] : tensor<$BLOCK_Nx$HEAD_DIMxbf16> -> !tile.tensor<?x?x?x?xbf16, ["B", "HK", "S", "D"]>
  tile.return
}

// (experiment, session nineteen) Attention backward with dQ fused into the dK/dV pass:
// examples/attention_bwd_dkdv.mlir plus, per query block, dQ's share of this key block,
// dS K = (dS^T)^T K scaled by the softmax scale, added to an f32 dQ with
// `tile.atomic_add` (dQ zeroed by the caller), so that S and P are recomputed once (5 MMAs
// a step) instead of once more in examples/attention_bwd_dq.mlir (7 in all). BLOCK_M 64
// (wgmma's M for the dQ MMA). In the interpreter it agrees with autograd
// (`exp_attention_bwd_dq_fused.py`); the compiler refuses it at `lower-aref` ("a left
// operand computed in registers cannot be transposed"): dS^T lives in registers and the
// dQ MMA needs it transposed, which takes staging it through shared memory; each
// consumer warp group could add its own keys' share of dQ (the dot feeds only an atomic
// add). docs/perf/2026-12-08.md, "dQ in the dK/dV pass".
tile.kernel @attention_bwd_dkdv(%q: !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]>, %k: !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]>, %v: !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]>, %do: !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]>, %lse: !tile.tensor<?x?x?xf32, ["B", "H", "S"]>, %delta: !tile.tensor<?x?x?xf32, ["B", "H", "S"]>, %dq: !tile.tensor<?x?x?x?xf32, ["B", "H", "S", "D"]>, %dk: !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]>, %dv: !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]>, %scale_log2e: f32) attributes {params = {BLOCK_M = 64, BLOCK_N = 128, HEAD_DIM = 128}} {
  %c0 = arith.constant 0 : index
  %bm = arith.constant $BLOCK_M : index
  %bn = arith.constant $BLOCK_N : index
  %pid_n = tile.program_id x
  %h = tile.program_id y
  %b = tile.program_id z
  %n0 = arith.muli %pid_n, %bn : index
  %S = tile.dim %q[2] : !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]>
  %kt = tile.load %k[%b, %h, %n0, %c0] : !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]> -> tensor<$BLOCK_Nx$HEAD_DIMxbf16>
  %vt = tile.load %v[%b, %h, %n0, %c0] : !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]> -> tensor<$BLOCK_Nx$HEAD_DIMxbf16>
  %zero = arith.constant dense<0.000000e+00> : tensor<$BLOCK_Nx$HEAD_DIMxf32>
  %s_zero = arith.constant dense<0.000000e+00> : tensor<$BLOCK_Nx$BLOCK_Mxf32>
  %scale = tile.splat %scale_log2e : f32 -> tensor<$BLOCK_Nx$BLOCK_Mxf32>
  %dk_acc, %dv_acc = scf.for %m = %c0 to %S step %bm iter_args(%dk_j = %zero, %dv_j = %zero) -> (tensor<$BLOCK_Nx$HEAD_DIMxf32>, tensor<$BLOCK_Nx$HEAD_DIMxf32>) {
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
    %dq_zero = arith.constant dense<0.000000e+00> : tensor<$BLOCK_Mx$HEAD_DIMxf32>
    %dqp = tile.dot %dst16, %kt, %dq_zero transpose_lhs : tensor<$BLOCK_Nx$BLOCK_Mxbf16>, tensor<$BLOCK_Nx$HEAD_DIMxbf16> -> tensor<$BLOCK_Mx$HEAD_DIMxf32>
    %ln2_i = arith.constant 0.693147182 : f32
    %sm_i = arith.mulf %scale_log2e, %ln2_i : f32
    %sm_q = tile.splat %sm_i : f32 -> tensor<$BLOCK_Mx$HEAD_DIMxf32>
    %dqs = arith.mulf %dqp, %sm_q : tensor<$BLOCK_Mx$HEAD_DIMxf32>
    tile.atomic_add %dqs, %dq[%b, %h, %m, %c0] : tensor<$BLOCK_Mx$HEAD_DIMxf32> -> !tile.tensor<?x?x?x?xf32, ["B", "H", "S", "D"]>
    %dk_new = tile.dot %dst16, %qt, %dk_j : tensor<$BLOCK_Nx$BLOCK_Mxbf16>, tensor<$BLOCK_Mx$HEAD_DIMxbf16> -> tensor<$BLOCK_Nx$HEAD_DIMxf32>
    scf.yield %dk_new, %dv_new : tensor<$BLOCK_Nx$HEAD_DIMxf32>, tensor<$BLOCK_Nx$HEAD_DIMxf32>
  }
  %ln2 = arith.constant 0.693147182 : f32
  %sm = arith.mulf %scale_log2e, %ln2 : f32
  %sm_b = tile.splat %sm : f32 -> tensor<$BLOCK_Nx$HEAD_DIMxf32>
  %dk_f = arith.mulf %dk_acc, %sm_b : tensor<$BLOCK_Nx$HEAD_DIMxf32>
  %dk16 = arith.truncf %dk_f : tensor<$BLOCK_Nx$HEAD_DIMxf32> to tensor<$BLOCK_Nx$HEAD_DIMxbf16>
  %dv16 = arith.truncf %dv_acc : tensor<$BLOCK_Nx$HEAD_DIMxf32> to tensor<$BLOCK_Nx$HEAD_DIMxbf16>
  tile.store %dk16, %dk[%b, %h, %n0, %c0] : tensor<$BLOCK_Nx$HEAD_DIMxbf16> -> !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]>
  tile.store %dv16, %dv[%b, %h, %n0, %c0] : tensor<$BLOCK_Nx$HEAD_DIMxbf16> -> !tile.tensor<?x?x?x?xbf16, ["B", "H", "S", "D"]>
  tile.return
}

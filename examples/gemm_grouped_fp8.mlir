// fp8 grouped GEMM (a mixture-of-experts layer in f8E4M3FN): C = A * W[e]^T * scale_a *
// scale_w for each expert e's tokens. The layout is gemm_grouped.mlir's: A is T x K with
// tokens sorted by expert and each expert's rows padded to a multiple of BLOCK_M, W is
// E x N x K, ids[x] the expert of row block x (-1: padding, no work); both operands fp8
// and K-major, fp32 accumulation, C bf16, per-tensor dequantisation scales (f32 scalars).
tile.kernel @gemm_grouped_fp8(%a: !tile.tensor<?x?xf8E4M3FN, ["T", "K"]>, %w: !tile.tensor<?x?x?xf8E4M3FN, ["E", "N", "K"]>, %ids: !tile.tensor<?xi32, ["BLOCKS"]>, %c: !tile.tensor<?x?xbf16, ["T", "N"]>, %scale_a: f32, %scale_w: f32) attributes {params = {BLOCK_M = 128, BLOCK_N = 256, BLOCK_K = 128}} {
  %c0 = arith.constant 0 : index
  %bk = arith.constant $BLOCK_K : index
  %bm = arith.constant $BLOCK_M : index
  %bn = arith.constant $BLOCK_N : index
  %pid_m = tile.program_id x
  %pid_n = tile.program_id y
  %m0 = arith.muli %pid_m, %bm : index
  %n0 = arith.muli %pid_n, %bn : index
  %e = tile.load_index %ids[%pid_m] : !tile.tensor<?xi32, ["BLOCKS"]>
  %valid = arith.cmpi sge, %e, %c0 : index
  %K = tile.dim %a[1] : !tile.tensor<?x?xf8E4M3FN, ["T", "K"]>
  %steps = arith.select %valid, %K, %c0 : index
  %zero = arith.constant dense<0.000000e+00> : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %acc = scf.for %k = %c0 to %steps step %bk iter_args(%acc_i = %zero) -> (tensor<$BLOCK_Mx$BLOCK_Nxf32>) {
    %x = tile.load %a[%m0, %k] : !tile.tensor<?x?xf8E4M3FN, ["T", "K"]> -> tensor<$BLOCK_Mx$BLOCK_Kxf8E4M3FN>
    %y = tile.load %w[%e, %n0, %k] : !tile.tensor<?x?x?xf8E4M3FN, ["E", "N", "K"]> -> tensor<$BLOCK_Nx$BLOCK_Kxf8E4M3FN>
    %d = tile.dot %x, %y, %acc_i transpose_rhs : tensor<$BLOCK_Mx$BLOCK_Kxf8E4M3FN>, tensor<$BLOCK_Nx$BLOCK_Kxf8E4M3FN> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
    scf.yield %d : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  }
  %scale = arith.mulf %scale_a, %scale_w : f32
  %s = tile.splat %scale : f32 -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %r = arith.mulf %acc, %s : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %o = arith.truncf %r : tensor<$BLOCK_Mx$BLOCK_Nxf32> to tensor<$BLOCK_Mx$BLOCK_Nxbf16>
  tile.store %o, %c[%m0, %n0] : tensor<$BLOCK_Mx$BLOCK_Nxbf16> -> !tile.tensor<?x?xbf16, ["T", "N"]>
  tile.return
}

// fp8 GEMM with per-row and per-column dequantisation scales:
// C[i, j] = (A * B^T)[i, j] * scale_a[i] * scale_b[j]. A is MxK f8E4M3FN, B is NxK
// f8E5M2 (mixed formats, both K-major), scale_a has M f32 entries, scale_b N, C is MxN
// bf16. The scales are 1-d loads broadcast in the epilogue (as examples/gemm_bias.mlir's bias).
tile.kernel @gemm_fp8_rowcol(%a: !tile.tensor<?x?xf8E4M3FN, ["M", "K"]>, %b: !tile.tensor<?x?xf8E5M2, ["N", "K"]>, %scale_a: !tile.tensor<?xf32, ["M"]>, %scale_b: !tile.tensor<?xf32, ["N"]>, %c: !tile.tensor<?x?xbf16, ["M", "N"]>) attributes {params = {BLOCK_M = 128, BLOCK_N = 128, BLOCK_K = 128}} {
  %c0 = arith.constant 0 : index
  %bk = arith.constant $BLOCK_K : index
  %bm = arith.constant $BLOCK_M : index
  %bn = arith.constant $BLOCK_N : index
  %pid_m = tile.program_id x
  %pid_n = tile.program_id y
  %m0 = arith.muli %pid_m, %bm : index
  %n0 = arith.muli %pid_n, %bn : index
  %K = tile.dim %a[1] : !tile.tensor<?x?xf8E4M3FN, ["M", "K"]>
  %zero = arith.constant dense<0.000000e+00> : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %acc = scf.for %k = %c0 to %K step %bk iter_args(%acc_i = %zero) -> (tensor<$BLOCK_Mx$BLOCK_Nxf32>) {
    %x = tile.load %a[%m0, %k] : !tile.tensor<?x?xf8E4M3FN, ["M", "K"]> -> tensor<$BLOCK_Mx$BLOCK_Kxf8E4M3FN>
    %y = tile.load %b[%n0, %k] : !tile.tensor<?x?xf8E5M2, ["N", "K"]> -> tensor<$BLOCK_Nx$BLOCK_Kxf8E5M2>
    %d = tile.dot %x, %y, %acc_i transpose_rhs : tensor<$BLOCK_Mx$BLOCK_Kxf8E4M3FN>, tensor<$BLOCK_Nx$BLOCK_Kxf8E5M2> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
    scf.yield %d : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  }
  %sa = tile.load %scale_a[%m0] : !tile.tensor<?xf32, ["M"]> -> tensor<$BLOCK_Mxf32>
  %sb = tile.load %scale_b[%n0] : !tile.tensor<?xf32, ["N"]> -> tensor<$BLOCK_Nxf32>
  %rows = tile.broadcast %sa, 0 : tensor<$BLOCK_Mxf32> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %cols = tile.broadcast %sb, 1 : tensor<$BLOCK_Nxf32> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %t = arith.mulf %acc, %rows : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %r = arith.mulf %t, %cols : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %o = arith.truncf %r : tensor<$BLOCK_Mx$BLOCK_Nxf32> to tensor<$BLOCK_Mx$BLOCK_Nxbf16>
  tile.store %o, %c[%m0, %n0] : tensor<$BLOCK_Mx$BLOCK_Nxbf16> -> !tile.tensor<?x?xbf16, ["M", "N"]>
  tile.return
}

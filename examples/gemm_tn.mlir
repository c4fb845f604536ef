// C = A^T * B with A stored KxM (M contiguous) and B stored KxN (N contiguous): both operands
// MN-major for the MMA (a backward pass's dB = A^T dC); bf16, fp32 accumulation.
// Parameters: BLOCK_M x BLOCK_N output tiles, BLOCK_K-deep steps (tawac compile -D BLOCK_N=128).
tile.kernel @gemm_tn(%a: !tile.tensor<?x?xbf16, ["K", "M"]>, %b: !tile.tensor<?x?xbf16, ["K", "N"]>, %c: !tile.tensor<?x?xbf16, ["M", "N"]>) attributes {params = {BLOCK_M = 128, BLOCK_N = 256, BLOCK_K = 64}} {
  %c0 = arith.constant 0 : index
  %bk = arith.constant $BLOCK_K : index
  %bm = arith.constant $BLOCK_M : index
  %bn = arith.constant $BLOCK_N : index
  %pid_m = tile.program_id x
  %pid_n = tile.program_id y
  %m0 = arith.muli %pid_m, %bm : index
  %n0 = arith.muli %pid_n, %bn : index
  %K = tile.dim %a[0] : !tile.tensor<?x?xbf16, ["K", "M"]>
  %zero = arith.constant dense<0.000000e+00> : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %acc = scf.for %k = %c0 to %K step %bk iter_args(%acc_i = %zero) -> (tensor<$BLOCK_Mx$BLOCK_Nxf32>) {
    %x = tile.load %a[%k, %m0] : !tile.tensor<?x?xbf16, ["K", "M"]> -> tensor<$BLOCK_Kx$BLOCK_Mxbf16>
    %y = tile.load %b[%k, %n0] : !tile.tensor<?x?xbf16, ["K", "N"]> -> tensor<$BLOCK_Kx$BLOCK_Nxbf16>
    %d = tile.dot %x, %y, %acc_i transpose_lhs : tensor<$BLOCK_Kx$BLOCK_Mxbf16>, tensor<$BLOCK_Kx$BLOCK_Nxbf16> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
    scf.yield %d : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  }
  %o = arith.truncf %acc : tensor<$BLOCK_Mx$BLOCK_Nxf32> to tensor<$BLOCK_Mx$BLOCK_Nxbf16>
  tile.store %o, %c[%m0, %n0] : tensor<$BLOCK_Mx$BLOCK_Nxbf16> -> !tile.tensor<?x?xbf16, ["M", "N"]>
  tile.return
}

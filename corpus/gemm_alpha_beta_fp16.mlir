// D = alpha * (A * B) + beta * R in fp16, with B stored KxN (N contiguous, "MN-major" for
// the MMA): a GEMM whose epilogue reads a second MxN matrix R (brought by the producer
// through TMA, as in examples/gemm_residual.mlir). A is MxK, B is KxN, R and D are MxN,
// all fp16; fp32 accumulation; alpha and beta are f32 scalars.
// Parameters: BLOCK_M x BLOCK_N output tiles, BLOCK_K-deep steps (tawac compile -D BLOCK_N=256).
tile.kernel @gemm_alpha_beta_fp16(%a: !tile.tensor<?x?xf16, ["M", "K"]>, %b: !tile.tensor<?x?xf16, ["K", "N"]>, %r: !tile.tensor<?x?xf16, ["M", "N"]>, %d: !tile.tensor<?x?xf16, ["M", "N"]>, %alpha: f32, %beta: f32) attributes {params = {BLOCK_M = 128, BLOCK_N = 128, BLOCK_K = 64}} {
  %c0 = arith.constant 0 : index
  %bk = arith.constant $BLOCK_K : index
  %bm = arith.constant $BLOCK_M : index
  %bn = arith.constant $BLOCK_N : index
  %pid_m = tile.program_id x
  %pid_n = tile.program_id y
  %m0 = arith.muli %pid_m, %bm : index
  %n0 = arith.muli %pid_n, %bn : index
  %K = tile.dim %a[1] : !tile.tensor<?x?xf16, ["M", "K"]>
  %zero = arith.constant dense<0.000000e+00> : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %acc = scf.for %k = %c0 to %K step %bk iter_args(%acc_i = %zero) -> (tensor<$BLOCK_Mx$BLOCK_Nxf32>) {
    %x = tile.load %a[%m0, %k] : !tile.tensor<?x?xf16, ["M", "K"]> -> tensor<$BLOCK_Mx$BLOCK_Kxf16>
    %y = tile.load %b[%k, %n0] : !tile.tensor<?x?xf16, ["K", "N"]> -> tensor<$BLOCK_Kx$BLOCK_Nxf16>
    %p = tile.dot %x, %y, %acc_i : tensor<$BLOCK_Mx$BLOCK_Kxf16>, tensor<$BLOCK_Kx$BLOCK_Nxf16> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
    scf.yield %p : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  }
  %rt = tile.load %r[%m0, %n0] : !tile.tensor<?x?xf16, ["M", "N"]> -> tensor<$BLOCK_Mx$BLOCK_Nxf16>
  %rf = arith.extf %rt : tensor<$BLOCK_Mx$BLOCK_Nxf16> to tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %sa = tile.splat %alpha : f32 -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %sb = tile.splat %beta : f32 -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %scaled = arith.mulf %acc, %sa : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %res = arith.mulf %rf, %sb : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %sum = arith.addf %scaled, %res : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %o = arith.truncf %sum : tensor<$BLOCK_Mx$BLOCK_Nxf32> to tensor<$BLOCK_Mx$BLOCK_Nxf16>
  tile.store %o, %d[%m0, %n0] : tensor<$BLOCK_Mx$BLOCK_Nxf16> -> !tile.tensor<?x?xf16, ["M", "N"]>
  tile.return
}

// C = A * B in fp16 with B stored KxN (N contiguous, "MN-major" for the MMA): the fp16
// counterpart of examples/gemm_nn.mlir. A is MxK, B is KxN, C is MxN; fp16 in and out,
// fp32 accumulation.
// Parameters: BLOCK_M x BLOCK_N output tiles (default 128x128), BLOCK_K-deep steps.
tile.kernel @gemm_nn_fp16(%a: !tile.tensor<?x?xf16, ["M", "K"]>, %b: !tile.tensor<?x?xf16, ["K", "N"]>, %c: !tile.tensor<?x?xf16, ["M", "N"]>) attributes {params = {BLOCK_M = 128, BLOCK_N = 128, BLOCK_K = 64}} {
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
    %d = tile.dot %x, %y, %acc_i : tensor<$BLOCK_Mx$BLOCK_Kxf16>, tensor<$BLOCK_Kx$BLOCK_Nxf16> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
    scf.yield %d : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  }
  %o = arith.truncf %acc : tensor<$BLOCK_Mx$BLOCK_Nxf32> to tensor<$BLOCK_Mx$BLOCK_Nxf16>
  tile.store %o, %c[%m0, %n0] : tensor<$BLOCK_Mx$BLOCK_Nxf16> -> !tile.tensor<?x?xf16, ["M", "N"]>
  tile.return
}

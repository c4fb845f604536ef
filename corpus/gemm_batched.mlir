// Batched GEMM: C[b] = A[b] * B[b]^T for every batch entry b. A is [batch, M, K], B is
// [batch, N, K] (both K-major), C is [batch, M, N]; bf16 in and out, fp32 accumulation.
// Program (x, y, z) = (row block, column block, batch entry): the batch index is the
// outermost coordinate of every load and of the store (as in examples/attention.mlir).
// Parameters: BLOCK_M x BLOCK_N output tiles, BLOCK_K-deep steps (tawac compile -D BLOCK_N=128).
tile.kernel @gemm_batched(%a: !tile.tensor<?x?x?xbf16, ["B", "M", "K"]>, %b: !tile.tensor<?x?x?xbf16, ["B", "N", "K"]>, %c: !tile.tensor<?x?x?xbf16, ["B", "M", "N"]>) attributes {params = {BLOCK_M = 128, BLOCK_N = 256, BLOCK_K = 64}} {
  %c0 = arith.constant 0 : index
  %bk = arith.constant $BLOCK_K : index
  %bm = arith.constant $BLOCK_M : index
  %bn = arith.constant $BLOCK_N : index
  %pid_m = tile.program_id x
  %pid_n = tile.program_id y
  %bz = tile.program_id z
  %m0 = arith.muli %pid_m, %bm : index
  %n0 = arith.muli %pid_n, %bn : index
  %K = tile.dim %a[2] : !tile.tensor<?x?x?xbf16, ["B", "M", "K"]>
  %zero = arith.constant dense<0.000000e+00> : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %acc = scf.for %k = %c0 to %K step %bk iter_args(%acc_i = %zero) -> (tensor<$BLOCK_Mx$BLOCK_Nxf32>) {
    %x = tile.load %a[%bz, %m0, %k] : !tile.tensor<?x?x?xbf16, ["B", "M", "K"]> -> tensor<$BLOCK_Mx$BLOCK_Kxbf16>
    %y = tile.load %b[%bz, %n0, %k] : !tile.tensor<?x?x?xbf16, ["B", "N", "K"]> -> tensor<$BLOCK_Nx$BLOCK_Kxbf16>
    %d = tile.dot %x, %y, %acc_i transpose_rhs : tensor<$BLOCK_Mx$BLOCK_Kxbf16>, tensor<$BLOCK_Nx$BLOCK_Kxbf16> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
    scf.yield %d : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  }
  %o = arith.truncf %acc : tensor<$BLOCK_Mx$BLOCK_Nxf32> to tensor<$BLOCK_Mx$BLOCK_Nxbf16>
  tile.store %o, %c[%bz, %m0, %n0] : tensor<$BLOCK_Mx$BLOCK_Nxbf16> -> !tile.tensor<?x?x?xbf16, ["B", "M", "N"]>
  tile.return
}

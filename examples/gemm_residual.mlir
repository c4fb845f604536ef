// D = alpha * (A * B^T) + beta * C: a GEMM whose epilogue reads a second matrix.
// A is MxK, B is NxK (bf16, K-major), C and D are MxN bf16; alpha and beta are f32 scalars.
// The C tile is loaded by the producer warp group through TMA into shared memory (an aref
// of its own), read into the accumulator's registers by the consumers and released.
// Parameters: BLOCK_M x BLOCK_N output tiles, BLOCK_K-deep steps (tawac compile -D BLOCK_N=128).
tile.kernel @gemm_residual(%a: !tile.tensor<?x?xbf16, ["M", "K"]>, %b: !tile.tensor<?x?xbf16, ["N", "K"]>, %c: !tile.tensor<?x?xbf16, ["M", "N"]>, %d: !tile.tensor<?x?xbf16, ["M", "N"]>, %alpha: f32, %beta: f32) attributes {params = {BLOCK_M = 128, BLOCK_N = 256, BLOCK_K = 64}} {
  %c0 = arith.constant 0 : index
  %bk = arith.constant $BLOCK_K : index
  %bm = arith.constant $BLOCK_M : index
  %bn = arith.constant $BLOCK_N : index
  %pid_m = tile.program_id x
  %pid_n = tile.program_id y
  %m0 = arith.muli %pid_m, %bm : index
  %n0 = arith.muli %pid_n, %bn : index
  %K = tile.dim %a[1] : !tile.tensor<?x?xbf16, ["M", "K"]>
  %zero = arith.constant dense<0.000000e+00> : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %acc = scf.for %k = %c0 to %K step %bk iter_args(%acc_i = %zero) -> (tensor<$BLOCK_Mx$BLOCK_Nxf32>) {
    %x = tile.load %a[%m0, %k] : !tile.tensor<?x?xbf16, ["M", "K"]> -> tensor<$BLOCK_Mx$BLOCK_Kxbf16>
    %y = tile.load %b[%n0, %k] : !tile.tensor<?x?xbf16, ["N", "K"]> -> tensor<$BLOCK_Nx$BLOCK_Kxbf16>
    %p = tile.dot %x, %y, %acc_i transpose_rhs : tensor<$BLOCK_Mx$BLOCK_Kxbf16>, tensor<$BLOCK_Nx$BLOCK_Kxbf16> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
    scf.yield %p : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  }
  %ct = tile.load %c[%m0, %n0] : !tile.tensor<?x?xbf16, ["M", "N"]> -> tensor<$BLOCK_Mx$BLOCK_Nxbf16>
  %cf = arith.extf %ct : tensor<$BLOCK_Mx$BLOCK_Nxbf16> to tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %sa = tile.splat %alpha : f32 -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %sb = tile.splat %beta : f32 -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %scaled = arith.mulf %acc, %sa : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %res = arith.mulf %cf, %sb : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %r = arith.addf %scaled, %res : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %o = arith.truncf %r : tensor<$BLOCK_Mx$BLOCK_Nxf32> to tensor<$BLOCK_Mx$BLOCK_Nxbf16>
  tile.store %o, %d[%m0, %n0] : tensor<$BLOCK_Mx$BLOCK_Nxbf16> -> !tile.tensor<?x?xbf16, ["M", "N"]>
  tile.return
}

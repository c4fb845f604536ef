// C = alpha * (A * B^T) + bias, bias broadcast over rows: a fused epilogue.
// A is MxK, B is NxK (bf16), bias has N f32 entries, C is MxN bf16; BLOCK_M x BLOCK_N tiles (default 128x128), BLOCK_K = 64.
tile.kernel @gemm_bias(%a: !tile.tensor<?x?xbf16, ["M", "K"]>, %b: !tile.tensor<?x?xbf16, ["N", "K"]>, %bias: !tile.tensor<?xf32, ["N"]>, %c: !tile.tensor<?x?xbf16, ["M", "N"]>, %alpha: f32) attributes {params = {BLOCK_M = 128, BLOCK_N = 128, BLOCK_K = 64}} {
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
    %d = tile.dot %x, %y, %acc_i transpose_rhs : tensor<$BLOCK_Mx$BLOCK_Kxbf16>, tensor<$BLOCK_Nx$BLOCK_Kxbf16> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
    scf.yield %d : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  }
  %s = tile.splat %alpha : f32 -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %scaled = arith.mulf %acc, %s : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %bv = tile.load %bias[%n0] : !tile.tensor<?xf32, ["N"]> -> tensor<$BLOCK_Nxf32>
  %bb = tile.broadcast %bv, 1 : tensor<$BLOCK_Nxf32> -> tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %r = arith.addf %scaled, %bb : tensor<$BLOCK_Mx$BLOCK_Nxf32>
  %o = arith.truncf %r : tensor<$BLOCK_Mx$BLOCK_Nxf32> to tensor<$BLOCK_Mx$BLOCK_Nxbf16>
  tile.store %o, %c[%m0, %n0] : tensor<$BLOCK_Mx$BLOCK_Nxbf16> -> !tile.tensor<?x?xbf16, ["M", "N"]>
  tile.return
}
